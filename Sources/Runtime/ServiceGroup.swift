/// Runs the process's services together and shuts them down in reverse order.
///
/// All services start concurrently, each in its own child task. The group shuts down when
///
/// - one of `gracefulShutdownSignals` arrives,
/// - any service returns or throws (a service is expected to run until it is asked to stop), or
/// - the task running `run()` is cancelled.
///
/// Shutdown walks the list backwards: it cancels the last service still running, waits for it to
/// end, then moves to the one before. List dependencies first: `[database, httpServer]` stops the
/// HTTP server before the database it uses. If the services have not all ended `shutdownTimeout`
/// after shutdown began, the remaining ones are cancelled together and `run()` throws
/// `ServiceGroupError.shutdownTimedOut` once they have ended.
///
/// If a service threw (other than `CancellationError` after it was asked to stop), `run()` throws
/// the first such error after all services have ended. Cancelling the task running `run()`
/// cancels every service at once, as structured concurrency does; the group still waits for each
/// in reverse order and reports them.
public struct ServiceGroup: Sendable {
    private let names: [String]
    private let services: [any Service]
    private let signals: [UnixSignal]
    private let shutdownTimeout: Duration?
    private let logger: Logger
    private let onShutdown: @Sendable () -> Void

    /// - Parameters:
    ///   - services: the services with the names used in log lines, dependencies first.
    ///   - gracefulShutdownSignals: the signals that start a shutdown; the first one received
    ///     starts it and later ones are logged and otherwise ignored.
    ///   - shutdownTimeout: how long a shutdown may take before the remaining services are
    ///     cancelled together; `nil` waits forever.
    ///   - onShutdown: called once when the shutdown begins, before any service is asked to stop
    ///     (for work beside the group that must not take the stopping services for broken ones).
    public init(
        services: [(name: String, service: any Service)],
        gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint],
        shutdownTimeout: Duration? = .seconds(30),
        logger: Logger,
        onShutdown: @escaping @Sendable () -> Void = {}
    ) {
        self.names = services.map(\.name)
        self.services = services.map(\.service)
        self.signals = gracefulShutdownSignals
        self.shutdownTimeout = shutdownTimeout
        self.logger = logger
        self.onShutdown = onShutdown
    }

    private enum Event: Sendable {
        case serviceEnded(index: Int, error: (any Error)?)
        case signal(UnixSignal)
        case shutdownTimedOut
        /// A helper task ended without news (the signal listener or timer was cancelled).
        case none
    }

    public func run() async throws {
        // Installed before any service starts, so a signal can never hit the default action.
        let signalStream = signals.isEmpty ? nil : UnixSignals.stream(signals)
        let stopRequests = services.map { _ in AsyncStream<Never>.makeStream() }

        var running = Set(services.indices)
        var firstError: (any Error)?
        var timedOutServices: [String] = []

        await withTaskGroup(of: Event.self) { group in
            for index in services.indices {
                let service = services[index]
                let stopRequest = stopRequests[index].stream
                logger.debug("service.starting", ["service": names[index]])
                group.addTask {
                    await Self.run(service, index: index, until: stopRequest)
                }
            }
            if let signalStream {
                group.addTask {
                    for await signal in signalStream {
                        return .signal(signal)
                    }
                    return .none
                }
            }

            // Running: wait for the first reason to shut down.
            waiting: while let event = await group.next() {
                switch event {
                case .serviceEnded(let index, let error):
                    running.remove(index)
                    if let error {
                        firstError = error
                        if error is CancellationError, Task.isCancelled {
                            logger.debug("service.stopped", ["service": names[index]])
                        } else {
                            logger.error("service.failed", ["service": names[index], "error": String(describing: error)])
                        }
                    } else {
                        logger.notice("service.finished", ["service": names[index]])
                    }
                    break waiting
                case .signal(let signal):
                    logger.notice("service_group.signal", ["signal": signal.description])
                    break waiting
                case .shutdownTimedOut, .none:
                    if Task.isCancelled { break waiting }
                }
            }
            if Task.isCancelled {
                logger.notice("service_group.cancelled")
            }

            // Shutting down: last service first.
            onShutdown()
            logger.info("service_group.shutdown", ["service.count": String(running.count)])
            if let shutdownTimeout {
                group.addTask {
                    do {
                        try await Task.sleep(for: shutdownTimeout)
                        return .shutdownTimedOut
                    } catch {
                        return .none
                    }
                }
            }
            for index in services.indices.reversed() where running.contains(index) {
                logger.debug("service.stopping", ["service": names[index]])
                stopRequests[index].continuation.finish()
                while running.contains(index), let event = await group.next() {
                    switch event {
                    case .serviceEnded(let ended, let error):
                        running.remove(ended)
                        if let error, !(error is CancellationError) {
                            firstError = firstError ?? error
                            logger.error("service.failed", ["service": names[ended], "error": String(describing: error)])
                        } else {
                            logger.debug("service.stopped", ["service": names[ended]])
                        }
                    case .signal(let signal):
                        logger.notice("service_group.signal.ignored", ["signal": signal.description])
                    case .shutdownTimedOut:
                        timedOutServices = services.indices.filter(running.contains).map { names[$0] }
                        logger.error("service_group.shutdown.timeout", ["services": timedOutServices.joined(separator: ",")])
                        group.cancelAll()
                    case .none:
                        break
                    }
                }
            }

            // The signal listener and the timer are all that is left.
            group.cancelAll()
            for await _ in group {}
        }

        if let firstError {
            throw firstError
        }
        if !timedOutServices.isEmpty {
            throw ServiceGroupError(code: .shutdownTimedOut, services: timedOutServices)
        }
        logger.info("service_group.stopped")
    }

    /// Runs one service until it ends or its stop request arrives, then cancels it and waits.
    private static func run(_ service: any Service, index: Int, until stopRequest: AsyncStream<Never>) async -> Event {
        await withTaskGroup(of: Event?.self) { group in
            group.addTask {
                do {
                    try await service.run()
                    return .serviceEnded(index: index, error: nil)
                } catch {
                    return .serviceEnded(index: index, error: error)
                }
            }
            group.addTask {
                for await _ in stopRequest {}
                return nil
            }
            // The first result is either the service ending on its own or the stop request
            // (which also ends when this task is cancelled); either way the other task goes.
            let first = await group.next()!
            group.cancelAll()
            if let first {
                return first
            }
            while let next = await group.next() {
                if let next { return next }
            }
            preconditionFailure("the service task always reports")
        }
    }
}

/// Why a `ServiceGroup` could not stop cleanly.
public struct ServiceGroupError: Error, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Some services were still running when the shutdown timeout expired.
        case shutdownTimedOut
    }

    public let code: Code
    /// The services involved, in list order.
    public let services: [String]

    public init(code: Code, services: [String]) {
        self.code = code
        self.services = services
    }

    public var description: String {
        switch code {
        case .shutdownTimedOut:
            "shutdown timed out waiting for: \(services.joined(separator: ", "))"
        }
    }
}
