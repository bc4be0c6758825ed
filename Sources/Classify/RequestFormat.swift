/// The encoding of the request, which FCM mirrors in its reply: JSON, or plain text (`id=` / `Error=` lines).
public enum RequestFormat: Sendable {
    case json
    case plainText
}
