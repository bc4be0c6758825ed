import HTTP
import Ingest
import Queue
import Support

extension AdminAPI {
    // MARK: - Per-tenant API tokens (SPEC §22)

    /// `GET /v1/admin/api-tokens`: every token, revoked ones too, oldest first; no secret.
    func apiTokenList(_ responder: any HTTPResponder) {
        readers.enqueue({ try $0.apiTokens(activeOnly: false) }) { result in
            Self.answer(result, responder) { Self.json(200, ["api_tokens": .array($0.map(AdminJSON.apiToken))]) }
        }
    }

    /// `POST /v1/admin/api-tokens` `{"apps": ["a", "b"], "role": "send" | "register" | "read", "name"?}` (role
    /// `send` when left out): 201 with the token and its `secret`, the only time the secret is shown. This instance
    /// honours it from the next request, the others within a few seconds.
    func createAPIToken(_ request: HTTPRequest, now: Int64, _ responder: any HTTPResponder) {
        let issued: (record: APITokenRecord, secret: String)
        do {
            let asked = try Self.apiTokenRequest(request.body).get()
            issued = try APITokenSecret.issue(apps: asked.apps, role: asked.role, name: asked.name, now: now)
        } catch let failure as APIError {
            return responder.respond(Self.error(failure))
        } catch {
            return responder.respond(Self.unavailable(error))
        }
        let record = issued.record
        writer.enqueue({ try $0.createAPIToken(record) }) { [apiTokens] result in
            switch result {
            case .failure(let unknown as UnknownAppsError):
                responder.respond(Self.invalid(unknown.description))
            case .failure(let failure):
                responder.respond(Self.unavailable(failure))
            case .success:
                apiTokens.add(record)
                Log.info("api token created", [
                    "id": .string(record.id), "role": .string(record.role.rawValue),
                    "apps": .string(record.storedApps),
                ])
                let shown = AdminJSON.apiToken(record).objectValue ?? []
                responder.respond(Self.json(201, .object(shown + [("secret", .string(issued.secret))])))
            }
        }
    }

    /// `DELETE /v1/admin/api-tokens/{id}`: revokes it, on this instance from the next request, on the others
    /// within a few seconds. 404 for an id that names no token still working.
    func revokeAPIToken(_ id: String, now: Int64, _ responder: any HTTPResponder) {
        writer.enqueue({ try $0.revokeAPIToken(id: id, now: now) }) { [apiTokens] result in
            Self.answer(result, responder) { revoked in
                guard revoked else { return Self.notFound("api token", id) }
                apiTokens.revoke(id: id)
                Log.info("api token revoked", ["id": .string(id)])
                return Self.json(200, ["id": .string(id), "revoked": .bool(true)])
            }
        }
    }

    /// The body of `POST /v1/admin/api-tokens`, checked for its shape (`APITokenSecret.issue` checks the values).
    private static func apiTokenRequest(
        _ body: [UInt8]
    ) -> Result<(apps: [String], role: APITokenRole, name: String?), APIError> {
        let shape = APIError.invalidParameters(#"the body must be {"apps": ["app", …], "role": "send" | "register" | "#
            + #""read", "name": "…"} (role and name optional)"#)
        guard let object = try? JSON.parse(body), let members = object.objectValue,
              members.allSatisfy({ ["apps", "role", "name"].contains($0.key) }),
              let given = object["apps"]?.arrayValue
        else { return .failure(shape) }
        let apps = given.compactMap(\.stringValue)
        guard apps.count == given.count else { return .failure(shape) }
        var role = APITokenRole.send
        if let value = object["role"] {
            guard let named = value.stringValue.flatMap(APITokenRole.init) else { return .failure(shape) }
            role = named
        }
        var name: String?
        if let value = object["name"], value != .null {
            guard let named = value.stringValue else { return .failure(shape) }
            name = named
        }
        return .success((apps, role, name))
    }
}
