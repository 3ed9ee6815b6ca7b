import CFFTW
import Synchronization

/// FFTW's planner is not thread-safe: every plan and destroy call goes through this lock.
/// Only setup code takes it; `RealFFT.forward()` does not.
private let plannerLock = Mutex(())

/// Whether plans are chosen by a fixed rule rather than by timing (`RealFFT.reproducible`).
private let reproduciblePlans = Atomic<Bool>(false)

/// The planner flag: `FFTW_MEASURE` (the fastest algorithm as timed on this machine now) or,
/// reproducible, `FFTW_ESTIMATE`.
private func planning() -> UInt32 {
    UInt32(reproduciblePlans.load(ordering: .relaxed) ? FFTW_ESTIMATE : FFTW_MEASURE)
}

/// A forward real-to-complex FFT of a fixed power-of-two size, over FFTW (single precision).
///
/// The plan is made once at setup (`FFTW_MEASURE`, or `FFTW_ESTIMATE` when `reproducible`)
/// on 16-byte-aligned buffers that FFTW allocated; `forward()` only executes it. Fill
/// `input`, call `forward()`, read `output`.
///
/// Not thread-safe: one thread at a time may use an instance.
public final class RealFFT: @unchecked Sendable {
    // @unchecked Sendable: the buffers and the plan are owned by this instance and only
    // touched by the thread that uses it (see the class doc); creation and destruction of
    // plans are serialised by `plannerLock`.

    /// Number of real input samples.
    public let size: Int
    /// The `size` real input samples (FFTW-aligned). FFTW may not preserve it across `forward()`.
    public let input: UnsafeMutableBufferPointer<Float>
    /// `size / 2 + 1` complex bins, interleaved (re, im), unnormalised: a sine of amplitude A at
    /// bin k reads about A·size/2 there (before windowing).
    public let output: UnsafeMutableBufferPointer<Float>
    private let plan: fftwf_plan

    /// Plans made from now on give the same output bits in every run on a machine: FFTW's
    /// measured planning picks among algorithms by timing them, so which one wins — and the
    /// last bits of every spectrum, pitch and peak frequency — changes with the machine's load
    /// (`jackvu analyze --stream` of one file gave five different outputs in twelve runs).
    /// Estimated plans cost the pitch detector 10–20 % more (`jackvu-bench meters`), every
    /// meter together 1–4 %. `jackvu analyze` sets it; the live engine keeps the fastest.
    public static var reproducible: Bool {
        get { reproduciblePlans.load(ordering: .relaxed) }
        set { reproduciblePlans.store(newValue, ordering: .relaxed) }
    }

    /// Plans the transform. Not real-time safe (allocates, plans, locks).
    public init(size: Int) throws(DSPError) {
        guard size >= 2, size & (size - 1) == 0 else { throw .invalidFFTSize(size) }
        self.size = size
        let outCount = 2 * (size / 2 + 1)
        guard let inPtr = fftwf_alloc_real(size), let outPtr = fftwf_alloc_real(outCount) else {
            throw .fftwFailure("cannot allocate \(size)-point buffers")
        }
        input = UnsafeMutableBufferPointer(start: inPtr, count: size)
        output = UnsafeMutableBufferPointer(start: outPtr, count: outCount)
        // FFTW_MEASURE overwrites the buffers while planning, so zero them afterwards.
        // (The plan crosses the lock's closure as an address: OpaquePointer is not Sendable.)
        let address = plannerLock.withLock { _ in
            Int(bitPattern: jackvu_fftwf_plan_r2c(Int32(size), inPtr, outPtr, planning() | UInt32(FFTW_DESTROY_INPUT)))
        }
        guard let made = fftwf_plan(bitPattern: address) else {
            fftwf_free(inPtr)
            fftwf_free(outPtr)
            throw .fftwFailure("cannot plan a \(size)-point real FFT")
        }
        plan = made
        input.update(repeating: 0)
        output.update(repeating: 0)
    }

    deinit {
        let address = Int(bitPattern: plan)
        plannerLock.withLock { _ in fftwf_destroy_plan(fftwf_plan(bitPattern: address)) }
        fftwf_free(input.baseAddress)
        fftwf_free(output.baseAddress)
    }

    /// Plans an inverse (complex-to-real) transform of `size` points from `from` (interleaved,
    /// `size / 2 + 1` complex values) to `to` (`size` floats), for a caller that owns both
    /// buffers; destroy it with `destroy`. FFTW_MEASURE, so planning overwrites both buffers:
    /// plan before they hold data (they are zeroed afterwards). Not real-time safe.
    static func planInverse(size: Int, from: UnsafeMutablePointer<Float>, to: UnsafeMutablePointer<Float>) -> fftwf_plan {
        let address = plannerLock.withLock { _ in
            Int(bitPattern: jackvu_fftwf_plan_c2r(Int32(size), from, to, planning()))
        }
        from.update(repeating: 0, count: 2 * (size / 2 + 1))
        to.update(repeating: 0, count: size)
        return fftwf_plan(bitPattern: address)!
    }

    /// Destroys a plan made by `planInverse`. Not real-time safe.
    static func destroy(_ plan: fftwf_plan) {
        let address = Int(bitPattern: plan)
        plannerLock.withLock { _ in fftwf_destroy_plan(fftwf_plan(bitPattern: address)) }
    }

    /// Transforms `input` into `output`. Real-time safe (no allocation, no lock).
    @inline(__always)
    public func forward() {
        fftwf_execute(plan)
    }
}
