extension APIError {
    /// A message for an app that no running configuration delivers for: refused rather than queued where nothing
    /// would ever send it. Ingest and `herald send` answer it in the same words.
    ///
    /// - Parameter known: the apps that are delivered for (`serve`'s configuration, or the `apps` table).
    public static func unknownApp(_ app: String, known: [String]) -> APIError {
        let list = known.isEmpty ? "no app yet (`herald serve` registers its apps when it starts)"
            : known.sorted().joined(separator: ", ")
        return .invalidParameters("unknown app \"\(app)\": this herald delivers for \(list)")
    }
}
