import Foundation

/// Waits until `condition` holds, checking every 20 ms, for at most `timeout` seconds.
public func eventually(timeout: Double = 15, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return try condition()
}
