import CMicroHTTPD
import Glibc

/// libmicrohttpd's responses to quick reads, kept while their subject stays as it is: a read of an
/// unchanged subject queues the same response again, and only its `X-Request-ID` changes. Making a
/// response and adding its six fields, then freeing them, was the largest cost left in a quick read
/// (each field is three allocations and six scans in libmicrohttpd, `git show dad6eb7:BENCHMARKS.md` "Quick reads").
///
/// **Why changing the field in place is safe.** libmicrohttpd writes a response's head into the
/// connection's own buffer right after the access handler's last call returns, before it serves any
/// other connection (connection.c, `MHD_CONNECTION_FULL_REQ_RECEIVED` → `START_REPLY` →
/// `build_header_response`, the same in 0.9.75 and 1.0.1), and reads the fields at no other time for a
/// response of known length. Every callback runs on the daemon's one thread, which owns this cache.
/// So each head carries the id of its own request (`QuickReadTests` sends interleaved requests with
/// ids of their own). The body is the response's own copy, which libmicrohttpd reference-counts: a
/// replaced response stays alive until the last connection sending it is done.
///
/// Bounded: `slotCount` subjects, each with a body of at most `largestBody` bytes (a larger one gets
/// a response of its own per read, as before). A subject takes the slot its name hashes to.
struct QuickResponses {
    static let slotCount = 256
    static let largestBody = 16 * 1024

    /// Whether this libmicrohttpd keeps a field's value where `MHD_get_response_header` shows it, so
    /// that writing over it changes the field, as 0.9.75 and 1.0.1 do: checked once, at the server's
    /// start, on a response of its own (the value written over through the pointer it gives, then the
    /// field read again: the same pointer, the new bytes). On a libmicrohttpd that keeps it elsewhere,
    /// every id is carried by replacing the field, the general way.
    static let writesInPlace: Bool = {
        guard let response = MHD_create_response_from_buffer(0, nil, MHD_ResponseMemoryMode.RESPMEM_PERSISTENT) else { return false }
        defer { MHD_destroy_response(response) }
        guard MHD_add_response_header(response, "X-Request-ID", "aaaa") == MHD_Result.YES,
              let value = Kept.value(in: response, count: 4) else { return false }
        for index in 0..<4 { value.bytes[index] = CChar(UInt8(ascii: "b")) }
        guard let again = MHD_get_response_header(response, "X-Request-ID") else { return false }
        return again == value.bytes && strcmp(again, "bbbb") == 0
    }()

    /// libmicrohttpd's response, released when its slot is taken by another version or subject.
    final class Kept {
        let response: OpaquePointer
        /// The `X-Request-ID` the response carries now (libmicrohttpd removes a field by its value).
        var requestID: String
        /// libmicrohttpd's own copy of that value (`MHD_get_response_header`), its bytes and their count;
        /// nil where it may not be written over (`writesInPlace`).
        private var value: (bytes: UnsafeMutablePointer<CChar>, count: Int)?
        private let inPlace: Bool

        init(response: OpaquePointer, requestID: String, inPlace: Bool = QuickResponses.writesInPlace) {
            (self.response, self.requestID, self.inPlace) = (response, requestID, inPlace)
            value = inPlace ? Self.value(in: response, count: requestID.utf8.count) : nil
        }

        deinit { MHD_destroy_response(response) }

        /// Makes the response carry `id`. An id as long as the one carried now (nearly always: made ids
        /// grow a digit only at each power of 16) is written over it in libmicrohttpd's copy, which
        /// the response owns for as long as the field is not removed (response.c: a `strdup` in
        /// 0.9.75's `add_response_entry`, a `malloc`ed copy with its length in 1.0.1's
        /// `add_response_entry_n`); another replaces the field (a removal by value and an addition,
        /// three allocations and a free).
        func carry(_ id: String) {
            var id = id
            let written = id.withUTF8 { bytes -> Bool in
                guard let value, let base = bytes.baseAddress, bytes.count == value.count else { return false }
                UnsafeMutableRawPointer(value.bytes).copyMemory(from: base, byteCount: bytes.count)
                return true
            }
            if !written {
                _ = requestID.withCString { old in MHD_del_response_header(response, "X-Request-ID", old) }
                _ = id.withCString { MHD_add_response_header(response, "X-Request-ID", $0) }
                value = inPlace ? Self.value(in: response, count: id.utf8.count) : nil
            }
            requestID = id
        }

        /// The field's value as libmicrohttpd keeps it (a NUL-terminated copy of its own), if it is
        /// `count` bytes long.
        static func value(in response: OpaquePointer, count: Int) -> (bytes: UnsafeMutablePointer<CChar>, count: Int)? {
            guard let value = MHD_get_response_header(response, "X-Request-ID"), strlen(value) == count else { return nil }
            return (UnsafeMutablePointer(mutating: value), count)
        }
    }

    /// A class: a look at a slot copies one reference, not five.
    final class Slot {
        let entry: Int
        let parameter: String?
        let eventID: UInt64
        let etag: String
        let body: [UInt8]
        let route: String
        let kept: Kept

        init(_ read: QuickReads.Answer, kept: Kept) {
            (entry, parameter, eventID, etag, body, route, self.kept) = (read.entry, read.parameter, read.eventID, read.etag, read.body, read.route, kept)
        }
    }

    /// A response that stays right while the state's generation does (`QuickReads.Answer.generation`),
    /// for a request target exactly as a client sent it.
    final class Lasting {
        let target: String
        let generation: UInt64
        let slot: Slot

        init(target: String, generation: UInt64, slot: Slot) { (self.target, self.generation, self.slot) = (target, generation, slot) }
    }

    /// Targets longer than this are not kept as lasting.
    static let longestTarget = 256

    private var slots = [Slot?](repeating: nil, count: slotCount)
    /// By target, hashed as the subjects are: a read of one of them, the state unchanged since, is
    /// answered without reading (`lasting(for:generation:requestID:)`).
    private var lasting = [Lasting?](repeating: nil, count: slotCount)

    /// The response kept for a GET of `target` while the state's generation is `generation`, carrying
    /// `requestID`, with its route; nil when there is none (the read is made). A response is kept so
    /// only for a target a quick read answered in this generation, with nothing in it that changes
    /// with time; the caller has made every check of the request a quick read makes but the read.
    mutating func lasting(for target: String, generation: UInt64, requestID: String) -> (response: OpaquePointer, route: String)? {
        guard let lasting = lasting[Self.slot(target: target)], lasting.generation == generation,
              Self.sameBytes(lasting.target, target) else { return nil }
        lasting.slot.kept.carry(requestID)
        return (lasting.slot.kept.response, lasting.slot.route)
    }

    /// The response to `read` with `requestID`, kept or made; nil if libmicrohttpd cannot make one.
    /// `make` makes a response with every field but `X-Request-ID`.
    /// `target` is the request's target as sent: a read with a generation is kept for it as lasting.
    mutating func response(for read: QuickReads.Answer, target: String, requestID: String,
                           make: (QuickReads.Answer) -> OpaquePointer?) -> OpaquePointer? {
        guard read.body.count <= Self.largestBody else { return nil }
        let index = Self.slot(entry: read.entry, parameter: read.parameter)
        let slot: Slot
        if let kept = slots[index], kept.entry == read.entry, kept.eventID == read.eventID, kept.parameter == read.parameter,
           kept.etag == read.etag, Self.same(kept.body, read.body) {
            kept.kept.carry(requestID)
            slot = kept
        } else {
            slots[index] = nil
            guard let response = make(read) else { return nil }
            _ = requestID.withCString { MHD_add_response_header(response, "X-Request-ID", $0) }
            slot = Slot(read, kept: Kept(response: response, requestID: requestID))
            slots[index] = slot
        }
        if let generation = read.generation, target.utf8.count <= Self.longestTarget {
            lasting[Self.slot(target: target)] = Lasting(target: target, generation: generation, slot: slot)
        }
        return slot.kept.response
    }

    /// The lasting slot of a target: FNV-1a over its bytes.
    private static func slot(target: String) -> Int { Int(fnv1a(target, from: 2_166_136_261) % UInt32(slotCount)) }

    /// The slot of a subject: FNV-1a over its read's number and its parameter's bytes.
    private static func slot(entry: Int, parameter: String?) -> Int {
        let hash = (2_166_136_261 ^ UInt32(truncatingIfNeeded: entry)) &* 16_777_619
        return Int((parameter.map { fnv1a($0, from: hash) } ?? hash) % UInt32(slotCount))
    }

    /// FNV-1a of `text`'s bytes, going on from `hash`.
    private static func fnv1a(_ text: String, from hash: UInt32) -> UInt32 {
        var (text, hash) = (text, hash)
        text.withUTF8 { bytes in
            for byte in bytes { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        }
        return hash
    }

    /// Whether two strings are the same bytes (`==` would also take canonically equivalent ones; a
    /// comparison of the views' elements cost 80 instructions a byte).
    private static func sameBytes(_ a: String, _ b: String) -> Bool {
        var (a, b) = (a, b)
        return a.withUTF8 { x in b.withUTF8 { y in equal(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y)) } }
    }

    /// Whether two bodies hold the same bytes (the same storage, mostly: the subject's kept encoding).
    private static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { a in b.withUnsafeBytes { b in equal(a, b) } }
    }

    private static func equal(_ x: UnsafeRawBufferPointer, _ y: UnsafeRawBufferPointer) -> Bool {
        guard x.count == y.count else { return false }
        guard let p = x.baseAddress, let q = y.baseAddress, p != q else { return true }
        return memcmp(p, q, x.count) == 0
    }
}
