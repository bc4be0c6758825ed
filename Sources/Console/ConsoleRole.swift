/// What a console user may do: everything, or look without acting (`--console-read-only-token`).
public enum ConsoleRole: String, Sendable {
    case admin
    case readOnly = "read_only"
}
