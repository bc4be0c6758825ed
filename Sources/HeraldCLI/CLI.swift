import Foundation

public enum HeraldCLI {
    public static func main() {
        exit(0)
    }
}
