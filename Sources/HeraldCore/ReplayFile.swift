import CLinux
import Glibc

/// A packed replay's frames, all its pieces in order, written once to a file in memory (`memfd`) and
/// followed by CRLF (the end of an HTTP/1.1 chunk). A stream that resumes from the pack sends them
/// with `sendfile` from it: the kernel takes the file's pages as they are, where a piece taken into a
/// write buffer is copied once there and once more into the socket (`Benchmarks/replay-bytes.c`:
/// 38 KB cost the sender 11.7–12.0 µs by `sendfile`, 17.0–17.5 µs copied).
public final class ReplayFile: Sendable {
    /// The open file; closed when the last stream sending from it and the pack let go.
    public let descriptor: Int32
    /// Bytes of frames, from the file's start; CRLF follows them.
    public let count: Int
    /// The pieces the frames came as.
    public let pieces: Int

    /// Writes `pieces` (each the frames of a pack's piece, in order) to a new file, then CRLF; nil when
    /// it cannot be made (no descriptor left, say): the pieces are then taken as they are.
    init?(_ pieces: [[UInt8]]) {
        let descriptor = clinux_memfd("herald-replay")
        guard descriptor >= 0 else { return nil }
        for bytes in pieces + [[0x0D, 0x0A]] {
            var written = 0
            while written < bytes.count {
                let result = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
                if result < 0, errno == EINTR { continue }
                guard result > 0 else {
                    close(descriptor)
                    return nil
                }
                written += result
            }
        }
        self.descriptor = descriptor
        count = pieces.reduce(0) { $0 + $1.count }
        self.pieces = pieces.count
    }

    deinit { close(descriptor) }
}
