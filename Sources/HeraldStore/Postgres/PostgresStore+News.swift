import Foundation
import CLinux
import HeraldJSON
import HeraldThreads
import Synchronization

// Other replicas' news: heard by the listener, assembled, and taken in by the writer without the lock.
extension PostgresStore {
    func signalNews() { cepoll_eventfd_signal(newsWake) }

    /// Puts the parts of news in the payloads' headers (`CommitNews.header`) together (on the
    /// listener's thread); true when some news is now whole.
    func assemble(_ headers: [CommitNews.Header?]) -> Bool {
        let known = seen.load(ordering: .relaxed)
        return heardNews.withLock { (heard: inout Heard) -> Bool in
            var whole = false
            for header in headers {
                // An unreadable payload names no revision: `missedBefore` below covers it.
                heard.newest = max(heard.newest, header?.revision ?? -1)
                guard let header, let part = header.part else {
                    let revision = header?.revision ?? .max
                    heard.missedBefore = max(heard.missedBefore, revision == .max ? known + Int64(Self.heardLimit) : revision)
                    whole = true  // wakes a batch waiting for news, which then reads
                    continue
                }
                let revision = header.revision
                guard revision > known, revision <= known + Int64(Self.heardLimit) else { continue }
                var parts = heard.parts[revision] ?? Array(repeating: nil, count: part.count)
                guard parts.count == part.count else { continue }
                parts[part.index] = part.body
                guard parts.allSatisfy({ $0 != nil }) else {
                    heard.parts[revision] = parts
                    continue
                }
                heard.parts[revision] = nil
                var body: [UInt8] = []
                for part in parts { if let part { body.appendUTF8(part) } }
                if let news = CommitNews(revision: revision, body: body) {
                    heard.whole[revision] = news
                } else {
                    heard.missedBefore = max(heard.missedBefore, revision)
                }
                whole = true
            }
            return whole
        }
    }

    /// With the lock, behind `revision`: takes in the news of the revisions missed, waiting for it up
    /// to `newsWait` milliseconds, unless some of it is known not to come. Whatever is still missing
    /// after it is read.
    func awaitNews(through revision: Int64, _ state: inout State, _ news: @escaping NewsTaker) {
        let deadline = Self.milliseconds() + Int64(Self.newsWait)
        while true {
            guard takeInNews(&state, news) != .declined, state.seenRevision >= 0, state.seenRevision < revision,
                  heardNews.withLock({ $0.missedBefore }) <= state.seenRevision else { return }
            let left = deadline - Self.milliseconds()
            guard left > 0 else { return }
            var descriptor = pollfd(fd: newsWake, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, Int32(left)) > 0 { cepoll_eventfd_drain(newsWake) }
        }
    }

    /// Caught up, too, when the next revision's news is whole or coming in parts (it came while this
    /// took in what was whole before it): the listener wakes the writer for it once it is whole, so it
    /// needs no batch that takes the lock. Parts that never come are of a revision the listener names
    /// missed when it connects again.
    public func takeInNews(_ news: @escaping NewsTaker) -> Bool {
        let caughtUp = try? use { state throws(StoreError) -> Bool in
            guard !state.inBatch, takeInNews(&state, news) != .failed, state.seenRevision >= 0 else { return false }
            let seen = state.seenRevision
            return heardNews.withLock { heard in
                heard.missedBefore <= seen && (heard.newest <= seen || heard.whole[seen + 1] != nil || heard.parts[seen + 1] != nil)
            }
        }
        return caughtUp ?? false
    }

    /// Takes in, on the writer, the news of every revision after the one seen, as far as it is whole
    /// and unbroken; the state then has seen them. Declined news is left to be read back.
    @discardableResult
    func takeInNews(_ state: inout State, _ take: NewsTaker?) -> NewsTaken? {
        guard state.seenRevision >= 0, let take else { return nil }
        let seenRevision = state.seenRevision
        let news = heardNews.withLock { heard -> CommitNews? in
            heard.whole = heard.whole.filter { $0.key > seenRevision }
            heard.parts = heard.parts.filter { $0.key > seenRevision }
            var joined: CommitNews?
            var next = seenRevision + 1
            while let news = heard.whole.removeValue(forKey: next) {
                joined = joined.map { $0.joined(with: news) } ?? news
                next += 1
            }
            return joined
        }
        guard let news else { return nil }
        let taken = take(news.events, news.changes)
        switch taken {
        case .taken:
            newsTakenIn.add(Int(news.revision - seenRevision), ordering: .relaxed)
            state.seenRevision = news.revision
            if let last = news.events.last?.id { state.seenSequence = last }
        case .declined:
            break
        case .failed:
            // Memory took a part of it: the next batch restores everything.
            state.seenRevision = -1
            state.seenSequence = nil
        }
        return taken
    }
}
