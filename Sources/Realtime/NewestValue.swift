import Synchronization

/// A mailbox of one: a producer hands over the newest value, a consumer on another thread takes
/// it when it is ready; a value not taken before the next one comes is replaced (and the
/// caller counts it as skipped). How the output thread hands updates to the threads of slow
/// outputs (stdout's writer, the terminal's drawing) without ever waiting for them. Not
/// real-time safe (a short lock).
public final class NewestValue<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: the only state is a Mutex.
    private let slot = Mutex<Value?>(nil)

    public init() {}

    /// Hands over `value`; returns whether it replaced one that had not been taken.
    @discardableResult
    public func put(_ value: Value) -> Bool {
        slot.withLock { slot in
            defer { slot = value }
            return slot != nil
        }
    }

    /// Takes the newest value, if one came since the last take.
    public func take() -> Value? {
        slot.withLock { slot in
            defer { slot = nil }
            return slot
        }
    }
}
