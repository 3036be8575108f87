import Foundation

/// A new path under the system's temporary directory, named `prefix-UUID`; nothing is made there yet.
/// A test that uses one removes it with `removeTemporaryDirectory` in a `defer`.
public func temporaryDirectory(_ prefix: String) -> String {
    NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString)"
}

/// Removes a directory `temporaryDirectory` named, with everything in it; one never made is fine.
public func removeTemporaryDirectory(_ path: String) {
    precondition(path.hasPrefix(NSTemporaryDirectory()), "only a temporary directory is removed: \(path)")
    try? FileManager.default.removeItem(atPath: path)
}
