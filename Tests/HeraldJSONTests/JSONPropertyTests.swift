import HeraldJSON
import HeraldTestSupport
import Testing

/// The JSON parser under mutated input (`Fuzzing`): whatever parses, prints and parses back the same.
@Suite struct JSONPropertyTests {
    @Test func jsonThatParsesRoundTrips() {
        Fuzzing.fuzz([#"{"a":[1,2.5,-0,"x\u00e9\n",true,false,null],"b":{"c":{}}}"#, #"{"bidder":"ann","amount":100}"#, "[[[[]]]]",
              #""\ud83d\ude00""#, "1e-400", "9223372036854775807", #"{"a":1,"b":2}"#], salt: 1) { bytes in
            guard let value = try? JSONValue.parse(bytes) else { return }
            let again = try? JSONValue.parse(value.bytes)
            #expect(again.map { Self.same($0, value) } == true, "round trip of \(String(decoding: bytes, as: UTF8.self))")
        }
    }

    /// Equal as JSON: numbers by value (the writer prints 2.0 as 2, which reads back as an integer).
    static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case let (.int(x), .double(y)), let (.double(y), .int(x)): Double(x) == y
        case let (.array(x), .array(y)): x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case let (.object(x), .object(y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && same($0.1, $1.1) }
        default: a == b
        }
    }
}
