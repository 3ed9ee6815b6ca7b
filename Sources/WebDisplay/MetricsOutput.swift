import Hummingbird
import HummingbirdWebSocket
import MetricsExport
import Outputs
import Realtime

/// The Prometheus metrics as one of the run's outputs (not a display: nobody looks at it;
/// the host plugs it in as it plugs in the displays): each update is recorded into the
/// exporter (the registry's atomics, on the output thread); with `--metrics` a listener of its
/// own serves `GET /metrics` alone (and a line at `/` that says where), with the browser
/// display's limits and guards (loopback host names only on a loopback address), for
/// services that want no display. `--http` serves the same exporter at its `/metrics`.
public final class MetricsOutput: SnapshotOutput, @unchecked Sendable {
    // @unchecked Sendable: the exporter is thread-safe; `task` is set once.
    public var name: String { "metrics" }
    public let exporter: MetricsExporter
    private let task: Task<Void, Never>?
    /// Where the metrics-only listener listens (nil without `--metrics`).
    public let address: HTTPListenAddress?

    /// `bits`, `stereo`: those readings' families too (`--send` names them).
    public init(
        context: DisplayContext, listen: HTTPListenAddress?, limits: HTTPLimits = HTTPLimits(), bits: Bool = false, stereo: Bool = false
    ) throws(WebDisplay.StartError) {
        exporter = MetricsExporter(client: context.clientName, channels: context.channels, bits: bits, stereo: stereo)
        guard let listen else {
            task = nil
            address = nil
            return
        }
        guard WebDisplay.resolves(listen.host) else { throw .unresolvable("'\(listen.host)' does not resolve to an address") }
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.add(middleware: RequestGuard<BasicWebSocketRequestContext>(
            loopbackOnly: RequestGuard<BasicWebSocketRequestContext>.isLoopbackHost(listen.host), origins: []))
        let exporter = self.exporter
        router.get("/metrics") { request, _ -> Response in WebDisplay.metricsResponse(exporter, request) }
        router.get("/") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: .init(string: "jackvu: Prometheus metrics at /metrics\n")))
        }
        do {
            let (task, address) = try WebDisplay.serve(router: router, address: listen, limits: limits, gate: ConnectionGate(limits: limits))
            self.task = task
            self.address = address
        } catch {
            throw error
        }
    }

    public func take(_ update: OutputUpdate) { exporter.record(update.snapshot) }

    public func stop() { task?.cancel() }

    public var counters: [String: Int] { ["scrapes": exporter.scrapes.count] }
}
