import HTTP
import Ingest
import Queue
import Support

extension AdminAPI {
    // MARK: - Reading

    /// `GET /v1/admin/dead?app=&reason=&since=&until=&token=&after=&limit=`: a page of dead letters, newest death
    /// first, and the `next` key to ask for the page after it (never an offset: each page is an index range).
    func deadLetters(_ request: HTTPRequest, now: Int64, _ responder: any HTTPResponder) {
        var fields = request.query
        let limitText = fields.removeValue(forKey: "limit")
        guard let limit = limitText.map({ Int($0) }) ?? Self.defaultPage, (1...Self.maximumPage).contains(limit) else {
            return responder.respond(Self.invalid("limit must be an integer in 1...\(Self.maximumPage)"))
        }
        let filter: DeadLetterFilter
        switch DeadLetterFilter.parse(fields, now: now, paging: true) {
        case .failure(let failure): return responder.respond(Self.error(failure))
        case .success(let parsed): filter = parsed
        }
        readers.enqueue({ try $0.deadLetters(filter, limit: limit) }) { result in
            Self.answer(result, responder) { letters in
                Self.json(200, [
                    "at": .int(now),
                    "dead_letters": .array(letters.map { AdminJSON.deadLetter($0, now: now) }),
                    "next": letters.count == limit ? letters.last.map { .string(DeadLetterCursor($0).text) } ?? .null
                        : .null,
                ])
            }
        }
    }

    /// `GET /v1/admin/dead/summary?app=&reason=&since=&until=&token=`: how many match, per app and reason (the
    /// total a requeue or purge of all that match will work through).
    func deadLetterSummary(_ request: HTTPRequest, now: Int64, _ responder: any HTTPResponder) {
        let filter: DeadLetterFilter
        switch DeadLetterFilter.parse(request.query, now: now, paging: false) {
        case .failure(let failure): return responder.respond(Self.error(failure))
        case .success(let parsed): filter = parsed
        }
        readers.enqueue({ try $0.deadLetterGroups(filter) }) { result in
            Self.answer(result, responder) { groups in
                Self.json(200, [
                    "at": .int(now),
                    "filter": filter.json,
                    "total": .int(groups.reduce(0) { $0 + $1.count }),
                    "groups": .array(groups.map(AdminJSON.group)),
                ])
            }
        }
    }

    /// `GET /v1/admin/dead/{delivery id}`: one dead letter and its message (payload included), as `herald dead
    /// show --json`.
    func deadLetter(_ text: String, now: Int64, _ responder: any HTTPResponder) {
        guard let id = Int64(text), id > 0 else { return responder.respond(Self.notFound("dead letter", text)) }
        readers.enqueue({ store in
            try store.snapshot {
                let letter = try store.deadLetter(id: id)
                return (letter, try letter.flatMap { try store.message(id: $0.messageID) })
            }
        }) { result in
            Self.answer(result, responder) { letter, message in
                guard let letter, let message else { return Self.notFound("dead letter", text) }
                var members = AdminJSON.deadLetter(letter, now: now).objectValue ?? []
                members.append(("message", AdminJSON.messageWithoutDeliveries(message)))
                return Self.json(200, .object(members))
            }
        }
    }

    // MARK: - Requeue and purge

    /// `POST /v1/admin/dead/requeue` and `/purge` with `{"ids": [...]}` (at most 1000, one chunk) or
    /// `{"filter": {...}, "limit"?: N}`: one chunk of at most `limit` (default 1000) of those that match, in one
    /// writer job. The answer says whether it was the last (`done`) and the `until` it used: a client loops with
    /// the same filter and that `until` until `done`, so rows that die again meanwhile are not taken again.
    func changeDeadLetters(_ request: HTTPRequest, requeue: Bool, now: Int64, _ responder: any HTTPResponder) {
        let body: JSON
        do {
            body = try JSON.parse(request.body)
        } catch {
            return responder.respond(Self.error(.invalidJSON("the body must be a JSON object")))
        }
        guard let members = body.objectValue else {
            return responder.respond(Self.error(.invalidJSON("the body must be a JSON object")))
        }
        if let unknown = members.first(where: { !["ids", "filter", "limit"].contains($0.key) }) {
            return responder.respond(Self.invalid("unknown field \"\(unknown.key)\""))
        }
        var filter: DeadLetterFilter
        let limit: Int
        switch (body["ids"], body["filter"]) {
        case (let ids?, nil):
            guard let list = ids.arrayValue, (1...Self.defaultChunk).contains(list.count),
                  case let numbers = list.compactMap(\.int64Value), numbers.count == list.count,
                  numbers.allSatisfy({ $0 > 0 })
            else {
                return responder.respond(Self.invalid("ids must be 1 to \(Self.defaultChunk) delivery ids"))
            }
            filter = DeadLetterFilter(deliveryIDs: numbers)
            limit = numbers.count
        case (nil, let object?):
            guard let fields = DeadLetterFilter.fields(of: object) else {
                return responder.respond(Self.invalid("filter must be an object of strings and numbers"))
            }
            switch DeadLetterFilter.parse(fields, now: now, paging: false) {
            case .failure(let failure): return responder.respond(Self.error(failure))
            case .success(let parsed): filter = parsed
            }
            filter.diedUntil = filter.diedUntil ?? now
            guard let chunk = body["limit"].map({ $0.int64Value.map(Int.init) }) ?? Self.defaultChunk,
                  (1...Self.maximumChunk).contains(chunk)
            else {
                return responder.respond(Self.invalid("limit must be an integer in 1...\(Self.maximumChunk)"))
            }
            limit = chunk
        default:
            return responder.respond(Self.invalid("give either \"ids\" or \"filter\""))
        }
        let chosen = filter
        if requeue {
            writer.enqueue({ try $0.requeueDeadLetters(chosen, now: now, limit: limit) }) { result in
                switch result {
                case .failure(let failure):
                    responder.respond(Self.unavailable(failure))
                case .success(let count):
                    if count > 0 {
                        self.committed()
                        Log.info("console requeued dead letters", ["count": .int(Int64(count))])
                    }
                    self.requeued(count, filter: chosen, limit: limit, now: now, responder)
                }
            }
        } else {
            writer.enqueue({ try $0.purgeDeadLetters(chosen, now: now, limit: limit) }) { result in
                Self.answer(result, responder) { purged in
                    if purged.deliveries > 0 {
                        Log.info("console purged dead letters", [
                            "count": .int(Int64(purged.deliveries)), "messages": .int(Int64(purged.messages)),
                        ])
                    }
                    return Self.json(200, [
                        "purged": .int(purged.deliveries), "messages_deleted": .int(purged.messages),
                        "done": .bool(purged.deliveries < limit), "until": AdminJSON.optional(chosen.diedUntil),
                    ])
                }
            }
        }
    }

    /// The answer to a requeue chunk; the last one says how many were left dead because their message expired
    /// (sent again they would only expire again), as `herald dead requeue` does.
    private func requeued(
        _ count: Int, filter: DeadLetterFilter, limit: Int, now: Int64, _ responder: any HTTPResponder
    ) {
        let done = count < limit
        @Sendable func body(skipped: Int?) -> HTTPResponse {
            Self.json(200, [
                "requeued": .int(count), "done": .bool(done), "until": AdminJSON.optional(filter.diedUntil),
                "skipped_expired": skipped.map { .int($0) } ?? .null,
            ])
        }
        guard done else { return responder.respond(body(skipped: nil)) }
        readers.enqueue({ try $0.expiredDeadLetterCount(filter, now: now) }) { result in
            Self.answer(result, responder) { body(skipped: $0) }
        }
    }
}
