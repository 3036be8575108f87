import Foundation
import HeraldClient
import HeraldTestSupport
import Testing

/// Every example in openapi.yaml decodes with HeraldClient's models, and the event stream's example
/// shows every kind of event the client knows. A document and a client that drift apart fail here.
///
/// The examples are JSON written inside the YAML (the document keeps them so, one value a line), so
/// no YAML parser is needed: a schema's `examples:` is followed by `- {json}` lines, a property's
/// examples are an inline JSON list, and the two media-type `example:`s are an SSE block and a JSON value.
@Suite struct HeraldClientModelTests {
    static let document: [String] = {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("openapi.yaml").path
        return ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").components(separatedBy: "\n")
    }()

    static func indentation(_ line: String) -> Int { line.prefix { $0 == " " }.count }

    /// The lines after `index` indented deeper than it, without their common indentation.
    static func block(after index: Int) -> [String] {
        let base = indentation(document[index])
        var lines: [String] = []
        for line in document[(index + 1)...] {
            if !line.trimmingCharacters(in: .whitespaces).isEmpty && indentation(line) <= base { break }
            lines.append(line)
        }
        let common = lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.map(indentation).min() ?? 0
        return lines.map { String($0.dropFirst(min(common, indentation($0)))) }
    }

    /// The schema (under `components/schemas`) that line `index` is in, and whether it is the
    /// schema's own `examples` (not a property's).
    static func schema(of index: Int) -> (String, Bool)? {
        let own = indentation(document[index]) == 6
        for line in document[..<index].reversed() where indentation(line) == 4 && line.hasSuffix(":") {
            return (line.trimmingCharacters(in: .whitespaces).dropLast().description, own)
        }
        return nil
    }

    func decode(_ schema: String, _ json: Data) throws {
        let decoder = JSONDecoder()
        switch schema {
        case "Auction": _ = try decoder.decode(Auction.self, from: json)
        case "Bid": _ = try decoder.decode(Bid.self, from: json)
        case "CurrencySetting": _ = try decoder.decode(CurrencySetting.self, from: json)
        case "Trip": _ = try decoder.decode(Trip.self, from: json)
        case "Unit": _ = try decoder.decode(HeraldUnit.self, from: json)
        case "Presence": _ = try decoder.decode(Presence.self, from: json)
        case "Problem": _ = try decoder.decode(HeraldProblem.self, from: json)
        default: Issue.record("openapi.yaml has an example of \(schema), which HeraldClient has no model for")
        }
    }

    @Test func everySchemaExampleDecodes() throws {
        var decoded: [String: Int] = [:]
        for (index, line) in Self.document.enumerated() where line.trimmingCharacters(in: .whitespaces).hasPrefix("examples:") {
            guard let (schema, own) = Self.schema(of: index) else { continue }
            if !own {
                // A property's examples: an inline list of strings.
                let list = line.trimmingCharacters(in: .whitespaces).dropFirst("examples:".count)
                #expect((try? JSONDecoder().decode([String].self, from: Data(list.utf8))) != nil, "\(schema): \(line)")
                continue
            }
            for item in Self.block(after: index) where item.hasPrefix("- ") {
                try decode(schema, Data(item.dropFirst(2).utf8))
                decoded[schema, default: 0] += 1
            }
        }
        #expect(Set(decoded.keys) == ["Auction", "Bid", "CurrencySetting", "Trip", "Unit", "Presence", "Problem"], "\(decoded)")
    }

    /// The stream's example decodes, and it shows every kind of event: one added to the client
    /// must be documented, and one documented must be typed (not `other`).
    @Test func theEventStreamExampleDecodesAndShowsEveryKind() throws {
        let index = try #require(Self.document.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "text/event-stream:" && Self.indentation($0) == 8 })
        let example = try #require(Self.document[index...].firstIndex { $0.trimmingCharacters(in: .whitespaces) == "example: |" })
        let text = Self.block(after: example).joined(separator: "\n") + "\n\n"
        let events = try HeraldEvent.decode(eventStream: text)
        let kinds = Set(events.map { Self.name(of: $0.kind) })
        let every: Set<String> = ["snapshot", "bid", "closed", "tick", "auction", "currency", "trip", "unit", "removed", "left", "notification",
                                  "joined", "userLeft", "watchers", "resync", "ready", "stream", "tokenExpiring", "expired"]
        #expect(kinds == every, "missing \(every.subtracting(kinds)), untyped \(kinds.subtracting(every))")
        let snapshots = Set(events.compactMap { event -> String? in
            guard case .snapshot(let snapshot) = event.kind else { return nil }
            return String(describing: snapshot).prefix { $0 != "(" }.description
        })
        #expect(snapshots == ["auction", "currency", "trip", "unit", "absentUnit", "notification", "auctions", "trips", "units", "presence"],
                "\(snapshots)")
        #expect(events.first { Self.name(of: $0.kind) == "tick" }?.id == nil, "a tick has no id")
    }

    /// `/changes`' example decodes entry by entry as the same events.
    @Test func theChangesExampleDecodes() throws {
        let line = try #require(Self.document.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("example: {\"events\"") })
        let json = try JSONDecoder().decode(Changes.self, from: Data(line.trimmingCharacters(in: .whitespaces).dropFirst("example: ".count).utf8))
        let events = try json.events.map { try HeraldEvent(id: $0.id, name: $0.event, data: JSONEncoder().encode($0.data)) }
        #expect(events.map { Self.name(of: $0.kind) } == ["bid", "auction", "left"])
        #expect(events.allSatisfy { $0.id != nil && !$0.topic.isEmpty })
    }

    struct Changes: Decodable {
        struct Entry: Decodable { var id: String; var event: String; var data: JSON }
        var events: [Entry]
        var last: String
    }

    static func name(of kind: HeraldEvent.Kind) -> String {
        String(describing: kind).prefix { $0 != "(" }.description
    }
}
