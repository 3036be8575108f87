public import Logging

/// Wraps the text log handler so that nothing a client sent reaches a terminal as a control sequence:
/// in the message and in every metadata value, C0 controls, DEL and C1 controls (ESC in a path, for
/// one) are written as `\u{1B}`, and a backslash as `\\`. The JSON format escapes them already.
public struct EscapingLogHandler: LogHandler {
    private var inner: any LogHandler

    public init(_ inner: any LogHandler) { self.inner = inner }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = "\(Self.escaped("\(event.message)"))"
        event.metadata = event.metadata?.mapValues { .string(Self.escaped("\($0)")) }
        inner.log(event: event)
    }

    /// `text` with every control character (and the backslash that introduces an escape) escaped.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if needsEscape(scalar) {
                out.append(contentsOf: (scalar == "\\" ? "\\\\" : "\\u{\(String(scalar.value, radix: 16, uppercase: true))}").unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\\"
    }
}
