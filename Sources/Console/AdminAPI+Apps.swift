import HTTP
import Ingest
import Queue
import Support

extension AdminAPI {
    /// `GET /v1/admin/apps`: every app, the config file's then the database's.
    func listApps(_ responder: any HTTPResponder) {
        guard let directory = apps else { return responder.respond(Self.json(200, ["apps": []])) }
        readers.enqueue({ try $0.appDefinitions() }) { result in
            Self.answer(result, responder) { records in
                Self.json(200, ["apps": .array(directory.configApps + records.map(directory.view))])
            }
        }
    }

    /// `GET /v1/admin/apps/{name}`.
    func showApp(_ name: String, _ responder: any HTTPResponder) {
        if let config = apps?.configApps.first(where: { $0["name"]?.stringValue == name }) {
            return responder.respond(Self.json(200, config))
        }
        guard let directory = apps else { return responder.respond(Self.notFound("app", name)) }
        readers.enqueue({ try $0.appDefinitions().first { $0.name == name } }) { result in
            Self.answer(result, responder) { record in
                record.map { Self.json(200, directory.view($0)) } ?? Self.notFound("app", name)
            }
        }
    }

    /// `PUT /v1/admin/apps/{name}`: stores the entry (201 new, 200 replaced) once it is checked, and answers once this
    /// instance applies it; 400 with the reason, 409 for a config-file app, nothing stored.
    func putApp(_ name: String, _ request: HTTPRequest, now: Int64, _ responder: any HTTPResponder) {
        guard let directory = apps else { return responder.respond(Self.readOnlyApps) }
        guard let body = try? JSON.parse(request.body) else {
            return responder.respond(Self.invalid("the body must be an \"apps\" entry: a JSON object"))
        }
        // Files are read and keys checked on a reader's thread, never on the server's loop.
        readers.enqueue({ _ -> Result<AppDefinitionRecord, APIError> in
            do throws(APIError) {
                return .success(try directory.prepare(name: name, body: body, now: now))
            } catch {
                return .failure(error)
            }
        }) { prepared in
            switch prepared {
            case .failure(let failure): responder.respond(Self.unavailable(failure))
            case .success(.failure(let refusal)): responder.respond(Self.error(refusal))
            case .success(.success(let record)):
                self.writer.enqueue({ try $0.putAppDefinition(record) }) { result in
                    switch result {
                    case .failure(let failure): responder.respond(Self.unavailable(failure))
                    case .success(let (stored, created)):
                        Log.info("app stored", [
                            "app": .string(name), "provider": .string(stored.provider), "version": .int(stored.version),
                        ])
                        directory.refresh { responder.respond(Self.json(created ? 201 : 200, directory.view(stored))) }
                    }
                }
            }
        }
    }

    /// `DELETE /v1/admin/apps/{name}`: its queued deliveries stay queued; 409 for a config-file app.
    func removeApp(_ name: String, now: Int64, _ responder: any HTTPResponder) {
        guard let directory = apps else { return responder.respond(Self.readOnlyApps) }
        if directory.configApps.contains(where: { $0["name"]?.stringValue == name }) {
            return responder.respond(Self.error(APIError(
                status: 409, code: "Conflict",
                message: "app \"\(name)\" is defined in the config file, which stays its source of truth")))
        }
        writer.enqueue({ try $0.removeAppDefinition(name, now: now) }) { result in
            switch result {
            case .failure(let failure): return responder.respond(Self.unavailable(failure))
            case .success(false): return responder.respond(Self.notFound("stored app", name))
            case .success(true): break
            }
            Log.info("app removed", ["app": .string(name)])
            directory.refresh { responder.respond(Self.json(200, ["name": .string(name), "removed": true])) }
        }
    }

    private static var readOnlyApps: HTTPResponse {
        error(APIError(status: 409, code: "Conflict", message: "this server's apps cannot be changed here"))
    }
}
