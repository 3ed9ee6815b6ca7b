/// jackvu's version, shared by `jackvu --version`, `jacktone --version` and the packaging
/// scripts (which read it from `jackvu --version`).
public enum JackVUVersion {
    public static let string = "0.3.0"
}
