/// Herald's version: what `herald --version`, `/health` and `herald_server_info` say. `openapi.yaml`'s
/// `info.version` and the container's `org.opencontainers.image.version` label say the same, which a
/// test checks.
public enum HeraldVersion {
    public static let current = "0.1.0"
}
