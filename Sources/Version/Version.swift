/// jackvu's version, shared by `jackvu --version`, `jacktone --version` and the packaging
/// scripts (which read it from `jackvu --version`). (This module is what the two command
/// lines share: also `oneLineMessage`.)
public enum JackVUVersion {
    public static let string = "0.3.0"
}
