#if canImport(Glibc)
import Glibc
#endif

/// What the machine's processor offers beyond the baseline the package is compiled for
/// (x86-64's SSE2), read once.
public enum MachineFeatures {
    /// Whether the `DSPAVX2` kernels may run: an x86-64 processor with x86-64-v3's
    /// instructions (AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT — `abm` there — MOVBE) whose
    /// registers the kernel saves — read from /proc/cpuinfo's `flags`, which list only what
    /// the kernel enabled. False on other processors, when /proc is not there, and when
    /// `JACKVU_BASELINE_DSP` is set in the environment (the baseline's path, to compare and
    /// to test it on a machine that has more).
    public static let x86_64v3: Bool = {
        #if arch(x86_64)
        guard getenv("JACKVU_BASELINE_DSP") == nil, let file = fopen("/proc/cpuinfo", "r") else { return false }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let text = String(cString: line)
            guard text.hasPrefix("flags") else { continue }
            let flags = Set(text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == ":" }).map(String.init))
            return flags.isSuperset(of: ["avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"])
        }
        return false
        #else
        return false
        #endif
    }()
}
