#if canImport(Glibc)
import Glibc
#endif

/// Ending the process at once from any thread, for a main thread held for good inside a
/// library call (libjack waits for a hung server's answer for ever): what must not be left
/// behind is put back first (the terminal display's terminal, which it registers while it
/// has it), then `_exit`: no destructors, no atexit handlers, no flushing of stdio (jackvu
/// writes its lines unbuffered, and its log commits as it goes).
public enum AbruptExit {
    /// What to put back before the end; set by its owner (a plain C function: it may run on
    /// any thread, with the rest of the process stuck).
    nonisolated(unsafe) public static var restore: (@convention(c) () -> Void)?

    /// Puts back what is registered, once (before a last line is written: the terminal
    /// display's alternate screen would take the line away with it).
    public static func putBack() {
        let r = restore
        restore = nil
        r?()
    }

    /// Puts back what is registered (if not yet) and ends the process with `status`.
    public static func exit(_ status: Int32) -> Never {
        putBack()
        _exit(status)
    }
}
