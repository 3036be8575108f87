import HeraldJSON
import Testing

@Suite struct JSONValueTests {
    @Test func serializesCompactlyKeepingMemberOrder() {
        let value: JSONValue = ["b": 1, "a": [true, nil, "x\"y\n"], "c": .double(1.5)]
        #expect(value.serialized == #"{"b":1,"a":[true,null,"x\"y\n"],"c":1.5}"#)
    }

    @Test func escapesControlCharacters() {
        #expect(JSONValue.string("\u{01}\u{2028}").serialized == #""\u0001\u2028""#)
    }

    @Test func parsesTypesExactly() throws {
        let value = try JSONValue.parse(Array(#"{"i":5,"d":5.5,"t":true,"n":null,"s":"x","a":[1]}"#.utf8))
        #expect(value["i"] == .int(5))
        #expect(value["d"] == .double(5.5))
        #expect(value["t"] == .bool(true))
        #expect(value["n"] == .null)
        #expect(value["s"] == .string("x"))
        #expect(value["a"] == .array([.int(1)]))
    }

    @Test func rejectsMalformedJSON() {
        for text in ["{", "{\"a\":}", "nope", "", "{\"a\":1}}"] {
            #expect(throws: JSONParseError.self, "\(text)") { try JSONValue.parse(Array(text.utf8)) }
        }
    }

    @Test func roundTrips() throws {
        let value: JSONValue = ["name": "Ünïcödé 🙂", "list": [1, 2, ["deep": false]]]
        #expect(try JSONValue.parse(value.bytes) == ["list": [1, 2, ["deep": false]], "name": "Ünïcödé 🙂"])
    }
}
