#if canImport(Glibc)
import Glibc
#endif

/// Errors of the Outputs module.
public enum OutputError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The reader of the output went away (EPIPE) or the descriptor is closed (EBADF).
    case closed(String)
    /// Another write error (errno).
    case writeFailed(String, errno: Int32)

    public var description: String {
        switch self {
        case .closed(let what): return "\(what) is closed"
        case .writeFailed(let what, let code): return "cannot write to \(what): \(String(cString: strerror(code)))"
        }
    }
}

/// Writes whole byte strings to a file descriptor (stdout by default) with `write(2)`,
/// retrying partial writes and EINTR. Blocks while the reader is slow: call it only from a
/// thread that may block (the output thread). SIGPIPE must be ignored by the process so that
/// a closed pipe shows up as `OutputError.closed`.
public struct FileDescriptorSink: Sendable {
    /// The descriptor.
    public let descriptor: Int32
    /// Its name in error messages.
    public let name: String

    public init(descriptor: Int32 = 1, name: String = "stdout") {
        self.descriptor = descriptor
        self.name = name
    }

    /// Writes all of `bytes`. Not real-time safe (blocks).
    public func write(_ bytes: UnsafeRawBufferPointer) throws(OutputError) {
        guard var p = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            let n = Glibc.write(descriptor, p, left)
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                if e == EPIPE || e == EBADF { throw .closed(name) }
                throw .writeFailed(name, errno: e)
            }
            p += n
            left -= n
        }
    }

    /// Writes a string's UTF-8 bytes. Not real-time safe.
    public func write(_ text: String) throws(OutputError) {
        var copy = text
        do {
            try copy.withUTF8 { utf8 in try write(UnsafeRawBufferPointer(utf8)) }
        } catch let e as OutputError {
            throw e
        } catch {
            throw .writeFailed(name, errno: EIO)
        }
    }
}

/// Writes `jackvu: MESSAGE` as one line on stderr; control characters in it (from a file or
/// port name) are escaped, so it stays one line and cannot drive the terminal.
public func printError(_ message: String) {
    let line = "jackvu: \(escapedForLine(message))\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}
