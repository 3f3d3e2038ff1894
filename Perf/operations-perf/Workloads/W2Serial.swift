// W2Serial.swift — W2: W1 on a queue of width 1 (a serial dispatch queue for dispatch).

/// W2 serial.
enum W2Serial {
    static let id = "W2"
    static let help = """
        serial: W1 on a width-1 queue (maxConcurrentOperationCount = 1; dispatch: a serial
        queue + group). N = --operations.
        """

    static func workload(_ n: Int) -> ThroughputWorkload {
        ThroughputWorkload(id: id, name: "serial", size: "n=\(n)", items: n) { competitor, counter in
            try competitor.runEach(n, width: .serial, counter: counter)
        }
    }
}
