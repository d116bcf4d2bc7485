import EngageAPI

extension EngageServer.Configuration {
    /// `engage serve` in process for a test that stops the database from answering: requests only
    /// (no projector, no scheduler) on a free loopback port, `poolSize` pooled connections, and keys
    /// cached for the whole test, so that a key looked up before the database stops answering
    /// lets requests reach the database call the test is about.
    static func requestsOnly(poolSize: Int) -> Self {
        var configuration = Self()
        configuration.http.port = 0
        configuration.poolSize = poolSize
        configuration.keyCacheLifetime = .seconds(600)
        configuration.runProjector = false
        configuration.runScheduler = false
        return configuration
    }
}
