/// The browser display's page: one self-contained document (no external files, no CDN). A
/// canvas scaled to the window and the device pixel ratio (phone to 4K), drawn from the
/// WebSocket's updates; it reconnects by itself (1 s, then up to 5 s apart) when jackvu goes
/// away and comes back. The note and levels (and "No JACK server", "Reconnecting") are also in an `aria-live` text line and the
/// document title, for screen readers and scripts.
///
/// The files are `Page/page.html`, `page.css` and `page.js` in this module, embedded in the
/// binary at build time (SwiftPM's `embedInCode`) and put together once: the page is still
/// one document with nothing to fetch, and the files are what editors, linters and
/// `node --check` (WebDisplayTests) see.
enum Page {
    static let html: String = {
        let html = String(decoding: PackageResources.page_html, as: UTF8.self)
        let css = String(decoding: PackageResources.page_css, as: UTF8.self)
        let js = String(decoding: PackageResources.page_js, as: UTF8.self)
        return html.replacing("/*jackvu:page.css*/\n", with: css).replacing("//jackvu:page.js\n", with: js)
    }()
}
