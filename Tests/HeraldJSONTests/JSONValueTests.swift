import HeraldJSON
import Testing

@Suite struct JSONValueTests {
    @Test func serializesCompactlyKeepingMemberOrder() {
        let value: JSONValue = ["b": 1, "a": [true, nil, "x\"y\n"], "c": .double(1.5)]
        #expect(value.serialized == #"{"b":1,"a":[true,null,"x\"y\n"],"c":1.5}"#)
    }

    /// A value written once is copied into each document as it is, and equals what writes the same text.
    @Test func anEncodedValueIsCopiedAsWritten() throws {
        let auction: JSONValue = .object([("id", "7"), ("leader", .string("a\"b")), ("price", 12)])  // as parsed: by name
        let once = JSONValue.encoded(auction.bytes)
        let event = JSONValue.object([("topic", "auctions/7"), ("auction", once)])
        #expect(event.serialized == #"{"topic":"auctions/7","auction":{"id":"7","leader":"a\"b","price":12}}"#)
        #expect(try JSONValue.parse(event.bytes)["auction"] == once)
        #expect(once == auction && auction == once && once.typeName == "object")
        #expect(JSONValue.encoded(Array("[1]".utf8)) != auction)
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

@Suite struct StrictJSONTests {
    @Test func refusesWhatOtherParsersReadDifferently() {
        for text in [#"{"a":1,}"#, "[1,]", #"{"a":1,"a":2}"#, #"{"a":{"b":1,"b":1}}"#, "01", "1.", ".5", "+1", "1e", "[1 2]",
                     #""\x""#, "\"a\u{01}\"", #""\uD800""#, "NaN", "// c\n1", "1e400", String(repeating: "[", count: 100)] {
            #expect(throws: JSONParseError.self, "\(text)") { try JSONValue.parse(Array(text.utf8)) }
        }
        #expect(throws: JSONParseError.self) { try JSONValue.parse([0x22, 0xFF, 0x22]) }
        #expect(throws: JSONParseError.self, "bytes that are not UTF-8 after an escape") { try JSONValue.parse([0x22, 0x5C, 0x6E, 0xC3, 0x22]) }
        #expect(throws: JSONParseError.self, "a four-byte sequence cut short") { try JSONValue.parse([0x22, 0xF0, 0x9F, 0x98, 0x22]) }
    }

    /// A string's runs between escapes are read whole, whatever stands around them.
    @Test func readsStringsBetweenAndAroundEscapes() throws {
        let cases: [(String, String)] = [(#""""#, ""), (#""plain é 🙂""#, "plain é 🙂"), (#""\n""#, "\n"), (#""a\nb""#, "a\nb"),
                                         (#""ab\\""#, "ab\\"), (#""\u00e9x\ty\"""#, "éx\ty\""), (#""\ud83d\ude00 é""#, "😀 é"), (#""é\/""#, "é/")]
        for (text, string) in cases {
            #expect(try JSONValue.parse(Array(text.utf8)) == .string(string), "\(text)")
        }
    }

    @Test func readsNumbersByTheGrammar() throws {
        #expect(try JSONValue.parse(Array("-0".utf8)) == .int(0))
        #expect(try JSONValue.parse(Array("9223372036854775807".utf8)) == .int(.max))
        #expect(try JSONValue.parse(Array("9223372036854775808".utf8)) == .double(9223372036854775808))
        #expect(try JSONValue.parse(Array("1e-400".utf8)) == .double(0), "not a whole number, though it rounds to 0")
        #expect(try JSONValue.parse(Array("0.5".utf8)) == .double(0.5))
        // A whole number written with a fraction or an exponent is an integer, as JSON Schema counts it.
        #expect(try JSONValue.parse(Array("2.0".utf8)) == .int(2))
        #expect(try JSONValue.parse(Array("1.5e1".utf8)) == .int(15))
        #expect(try JSONValue.parse(Array("-1e2".utf8)) == .int(-100))
        #expect(try JSONValue.parse(Array("1000e-3".utf8)) == .int(1))
        #expect(try JSONValue.parse(Array("-9.223372036854775808e18".utf8)) == .int(.min))
        #expect(try JSONValue.parse(Array("9.223372036854775808e18".utf8)) == .double(9223372036854775808))
        #expect(try JSONValue.parse(Array("1e18".utf8)) == .int(1_000_000_000_000_000_000))
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Array("1e999999999999".utf8)) }
        #expect(try JSONValue.parse(Array(#" {"s":"\u00e9\ud83d\ude00\n"} "#.utf8))["s"] == .string("é😀\n"))
    }
}
