#if canImport(Glibc)
import Glibc
#endif
import LV2Description

// Writes an LV2 bundle's Turtle from the reading table (`LV2Description`):
//   jackvu-lv2-ttl BUNDLE_DIR [BINARY]
// writes BUNDLE_DIR/manifest.ttl and BUNDLE_DIR/jackvu.ttl; BINARY (default jackvu.so) is the
// plugin library's name inside the bundle. Tools/lv2.sh runs it when it makes the bundle.
/// A line on stderr (write(2): Glibc's `stderr` is shared mutable state to Swift 6).
func complain(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
guard arguments.count == 2 || arguments.count == 3, !arguments[1].hasPrefix("-") else {
    complain("usage: jackvu-lv2-ttl BUNDLE_DIR [BINARY]")
    exit(64)
}
let directory = arguments[1], binary = arguments.count == 3 ? arguments[2] : "jackvu.so"

func write(_ text: String, to path: String) {
    guard let file = fopen(path, "w") else {
        complain("jackvu-lv2-ttl: cannot write \(path): \(String(cString: strerror(errno)))")
        exit(73)
    }
    fputs(text, file)
    guard fclose(file) == 0 else {
        complain("jackvu-lv2-ttl: cannot write \(path): \(String(cString: strerror(errno)))")
        exit(74)
    }
}

write(LV2Description.manifest(binary: binary), to: directory + "/manifest.ttl")
write(LV2Description.description(), to: directory + "/jackvu.ttl")
