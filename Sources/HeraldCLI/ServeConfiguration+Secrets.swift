import Console
import Foundation
import OAuth
import ProviderKit
import ProviderList

extension ServeConfiguration {
    /// The key in `--secrets-key-file`'s file, with a warning when other users may read it; an error that says what is
    /// wrong without quoting the file.
    static func loadSecretsKey(_ path: String) throws -> SecretsKey {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw Invalid(description: "cannot read the secrets key file \(path)")
        }
        let key: SecretsKey
        do {
            key = try SecretsKey(fileText: text)
        } catch {
            throw Invalid(description: "--secrets-key-file \(path): \(error)")
        }
        AppEntry.warnIfOthersCanRead(path, "the secrets key file", app: nil)
        return key
    }
}

extension ServeConfiguration {
    /// The secrets key's id and the certificates of the apps that have one, for `status` and the console.
    var credentialFacts: CredentialFacts {
        CredentialFacts(secretsKeyID: secretsKey?.id, certificates: Self.certificates(of: apps))
    }

    /// App → certificate of those of `apps` that have one.
    static func certificates(of apps: some Sequence<AppConfiguration>) -> [String: CredentialFacts.Certificate] {
        var certificates: [String: CredentialFacts.Certificate] = [:]
        for app in apps {
            guard let certificate = app.settings.clientCertificate else { continue }
            certificates[app.name] = CredentialFacts.Certificate(
                expiresAt: certificate.notAfterMillis, sha256: certificate.sha256Fingerprint,
                subject: certificate.subjectCommonName,
                provider: ProviderList.named(app.provider)?.title ?? app.provider)
        }
        return certificates
    }
}
