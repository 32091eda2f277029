//! SARIF 2.1.0 (the OASIS Static Analysis Results Interchange Format, read by GitHub code
//! scanning): the subset of the object model tpuport writes, as typed structs. A verb fills a
//! [`Log`] and renders it with [`Log::render`]; property names follow the specification's
//! camelCase.

use serde::Serialize;

use crate::ReportError;

/// The schema URI written as `$schema`.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The format version written as `version`.
pub const VERSION: &str = "2.1.0";

/// `sarifLog`: the top-level object.
#[derive(Clone, Debug, Serialize)]
pub struct Log {
    /// Always [`SCHEMA`].
    #[serde(rename = "$schema")]
    pub schema: &'static str,
    /// Always [`VERSION`].
    pub version: &'static str,
    /// One run per tool invocation.
    pub runs: Vec<Run>,
}

impl Log {
    /// A log holding `runs`.
    #[must_use]
    pub fn new(runs: Vec<Run>) -> Log {
        Log { schema: SCHEMA, version: VERSION, runs }
    }

    /// Pretty JSON with a trailing newline.
    ///
    /// # Errors
    /// When serialisation fails (a property bag holding a value JSON cannot represent).
    pub fn render(&self) -> Result<String, ReportError> {
        crate::json::to_pretty(self)
    }
}

/// `run`: one invocation of one tool.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// The tool and the rules it knows.
    pub tool: Tool,
    /// How columns are counted: `unicodeCodePoints` or `utf16CodeUnits`.
    pub column_kind: &'static str,
    /// The findings.
    pub results: Vec<Finding>,
    /// Whether the run succeeded, and why not.
    pub invocations: Vec<Invocation>,
}

/// `tool`.
#[derive(Clone, Debug, Serialize)]
pub struct Tool {
    /// The analysis tool itself.
    pub driver: Driver,
}

/// `toolComponent` as the driver.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Driver {
    /// Tool name.
    pub name: String,
    /// Where the tool is documented.
    pub information_uri: String,
    /// Tool version.
    pub version: String,
    /// Every rule the tool can report; results point into this list by index.
    pub rules: Vec<Rule>,
}

/// `reportingDescriptor`: one rule.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// Stable id (the code).
    pub id: String,
    /// Readable name.
    pub name: String,
    /// One sentence.
    pub short_description: Message,
    /// Longer description.
    pub full_description: Message,
    /// Link to the documentation.
    pub help_uri: String,
    /// The documentation itself.
    pub help: Help,
    /// Default severity.
    pub default_configuration: Configuration,
    /// Free-form properties (family, status, …).
    pub properties: serde_json::Map<String, serde_json::Value>,
}

/// `message` with plain text.
#[derive(Clone, Debug, Serialize)]
pub struct Message {
    /// The text.
    pub text: String,
}

impl Message {
    /// A plain-text message.
    #[must_use]
    pub fn new(text: impl Into<String>) -> Message {
        Message { text: text.into() }
    }
}

/// `multiformatMessageString`: text and Markdown.
#[derive(Clone, Debug, Serialize)]
pub struct Help {
    /// Plain text.
    pub text: String,
    /// Markdown.
    pub markdown: String,
}

/// `reportingConfiguration`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Configuration {
    /// Default level of the rule's results.
    pub level: Level,
}

/// `level` of a result or notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Not a problem.
    None,
    /// Worth knowing.
    Note,
    /// A problem.
    Warning,
    /// A serious problem.
    Error,
}

/// `result`: one finding.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The rule's id.
    pub rule_id: String,
    /// The rule's index in [`Driver::rules`].
    pub rule_index: usize,
    /// Severity.
    pub level: Level,
    /// What was found.
    pub message: Message,
    /// Where.
    pub locations: Vec<Location>,
}

/// `location`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    /// A file and an optional region in it.
    pub physical_location: PhysicalLocation,
}

impl Location {
    /// A whole file, or a region of it.
    #[must_use]
    pub fn file(artifact: ArtifactLocation, region: Option<Region>) -> Location {
        Location { physical_location: PhysicalLocation { artifact_location: artifact, region } }
    }
}

/// `physicalLocation`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhysicalLocation {
    /// The file.
    pub artifact_location: ArtifactLocation,
    /// Lines and columns, 1-based; absent for the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<Region>,
}

/// `artifactLocation`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactLocation {
    /// Path with `/` separators, relative to `uri_base_id` when given.
    pub uri: String,
    /// Symbolic base such as `%SRCROOT%`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri_base_id: Option<String>,
}

/// `region`: 1-based lines and columns, end exclusive.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Region {
    /// First line.
    pub start_line: u32,
    /// First column.
    pub start_column: u32,
    /// Last line.
    pub end_line: u32,
    /// Column after the last character.
    pub end_column: u32,
}

/// `invocation`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    /// False when some input could not be analysed.
    pub execution_successful: bool,
    /// What went wrong, one notification per failure.
    pub tool_execution_notifications: Vec<Notification>,
}

/// `notification`: a problem of the tool, not of the code (a file it could not read).
#[derive(Clone, Debug, Serialize)]
pub struct Notification {
    /// Severity.
    pub level: Level,
    /// What happened.
    pub message: Message,
    /// Where.
    pub locations: Vec<Location>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn serialises_with_the_specification_names() {
        let run = Run {
            tool: Tool {
                driver: Driver {
                    name: "t".into(),
                    information_uri: "https://example.invalid".into(),
                    version: "1".into(),
                    rules: vec![],
                },
            },
            column_kind: "unicodeCodePoints",
            results: vec![Finding {
                rule_id: "X1".into(),
                rule_index: 0,
                level: Level::Warning,
                message: Message::new("m"),
                locations: vec![Location::file(
                    ArtifactLocation { uri: "a.py".into(), uri_base_id: Some("%SRCROOT%".into()) },
                    Some(Region { start_line: 1, start_column: 2, end_line: 1, end_column: 5 }),
                )],
            }],
            invocations: vec![Invocation {
                execution_successful: false,
                tool_execution_notifications: vec![Notification {
                    level: Level::Error,
                    message: Message::new("unreadable"),
                    locations: vec![Location::file(
                        ArtifactLocation { uri: "b.py".into(), uri_base_id: None },
                        None,
                    )],
                }],
            }],
        };
        let text = Log::new(vec![run]).render().unwrap();
        assert!(text.ends_with("}\n"));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["$schema"], SCHEMA);
        assert_eq!(v["version"], "2.1.0");
        let r = &v["runs"][0];
        assert_eq!(r["columnKind"], "unicodeCodePoints");
        assert_eq!(r["tool"]["driver"]["informationUri"], "https://example.invalid");
        let res = &r["results"][0];
        assert_eq!(res["ruleId"], "X1");
        assert_eq!(res["level"], "warning");
        let loc = &res["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert_eq!(loc["region"]["endColumn"], 5);
        let n = &r["invocations"][0];
        assert_eq!(n["executionSuccessful"], false);
        let nloc = &n["toolExecutionNotifications"][0]["locations"][0]["physicalLocation"];
        assert!(
            nloc.get("region").is_none() && nloc["artifactLocation"].get("uriBaseId").is_none()
        );
    }
}
