//! Reports as the suite holds them, whatever measured them, read as this version's `Report`.
//!
//! A client tool's report (ab, wrk, h2load) leaves null what the tool does not measure, and a
//! report stored by an older version lacks the fields added since; the report's types take
//! neither. Reading one for a merge, a null or missing field that is never null in this version
//! reads as the engine's default for it, else as zero: its counts add nothing, and its latency
//! summaries, with no histogram, leave the merge none (see `Report::merge`). Which fields may be
//! null and what their defaults are comes from the report's own JSON Schema, so a field added to
//! the report is read this way with no change here. A tool's times with decimals in a field of
//! whole microseconds read rounded.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::{schema, Report};

impl Report {
    /// The report in `json`, its null or missing fields at their default or zero, and fields
    /// this version does not know (a tool's own status groups, a cluster's `hosts`) left out.
    pub fn read_any(json: &str) -> Result<Report, String> {
        let mut report: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
        derive_succeeded(&mut report);
        let schema = report_schema();
        fill(&mut report, schema, &schema["$defs"]);
        serde_json::from_value(report).map_err(|e| e.to_string())
    }
}

/// A report that does not say which answers succeeded (one from before `requests.succeeded`, or
/// a tool's left null) but counted every completed answer by status class and expected any 2xx,
/// as every report before `expect_status` did: its 2xx answers are its succeeded. Without such a
/// count (wrk's 4xx and 5xx only, or a level merged with such a round) it stays unknown. A count
/// of succeeded without its rate (a tool's) gets it.
fn derive_succeeded(report: &mut Value) {
    let any_2xx = report["spec"]["expect_status"]
        .as_array()
        .is_none_or(Vec::is_empty);
    let classes = ["1xx", "2xx", "3xx", "4xx", "5xx", "other"]
        .map(|class| report["status"][class].as_u64().unwrap_or(0));
    let counted_all = report["requests"]["completed"].as_u64() == Some(classes.iter().sum());
    let ok = report["status"]["2xx"]
        .as_u64()
        .filter(|_| any_2xx && counted_all);
    let duration_s = report["duration_s"].as_f64();
    let Some(requests) = report.get_mut("requests").and_then(Value::as_object_mut) else {
        return;
    };
    let unknown =
        |requests: &Map<String, Value>, field: &str| requests.get(field).is_none_or(Value::is_null);
    if let (true, Some(ok)) = (unknown(requests, "succeeded"), ok) {
        requests.insert("succeeded".into(), ok.into());
    }
    let succeeded = requests.get("succeeded").and_then(Value::as_u64);
    if let (true, Some(n), Some(d)) = (
        unknown(requests, "succeeded_per_second"),
        succeeded,
        duration_s,
    ) {
        requests.insert(
            "succeeded_per_second".into(),
            super::per(n as f64, d).into(),
        );
    }
}

fn report_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(schema)
}

/// `value`, of the schema `node`, with what it may not leave null filled in at any depth.
fn fill(value: &mut Value, node: &Value, defs: &Value) {
    let node = resolved(node, defs);
    match value {
        Value::Object(fields) => {
            if let Some(properties) = node.get("properties").and_then(Value::as_object) {
                fields.retain(|name, _| properties.contains_key(name));
                for (name, property) in properties {
                    match fields.get_mut(name) {
                        Some(field) if !field.is_null() => fill(field, property, defs),
                        _ if nullable(property) => {}
                        _ => {
                            fields.insert(name.clone(), zero(property, defs));
                        }
                    }
                }
            } else if let Some(values) = node.get("additionalProperties").filter(|v| v.is_object())
            {
                for v in fields.values_mut() {
                    if v.is_null() {
                        *v = zero(values, defs);
                    } else {
                        fill(v, values, defs);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.get("items") {
                items.iter_mut().for_each(|v| fill(v, item, defs));
            }
        }
        // A tool prints its times with decimals where the engine counts whole microseconds.
        Value::Number(n) if n.is_f64() && typed(node, "integer") => {
            *value = (n.as_f64().unwrap_or_default().round() as u64).into();
        }
        _ => {}
    }
}

/// The type `node` stands for: the definition it refers to, or of an option, the type besides
/// null.
fn resolved<'a>(node: &'a Value, defs: &'a Value) -> &'a Value {
    if let Some(name) = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        return resolved(&defs[name], defs);
    }
    let options: Vec<&Value> = node
        .get("anyOf")
        .and_then(Value::as_array)
        .map_or(Vec::new(), |options| {
            options.iter().filter(|o| !typed(o, "null")).collect()
        });
    match options[..] {
        [only] => resolved(only, defs),
        _ => node,
    }
}

fn nullable(node: &Value) -> bool {
    typed(node, "null")
        || ["anyOf", "oneOf"].iter().any(|k| {
            node.get(k)
                .and_then(Value::as_array)
                .is_some_and(|options| options.iter().any(|o| typed(o, "null")))
        })
}

/// Whether the schema `node` allows values of the JSON type `kind`, alone or among others.
fn typed(node: &Value, kind: &str) -> bool {
    node.get("type")
        .is_some_and(|t| t == kind || t.as_array().is_some_and(|ts| ts.iter().any(|t| t == kind)))
}

/// What the engine reads for a field of the schema `node` that a report leaves null: the
/// field's default, else zero, an empty string or list, false, or an object of such fields.
fn zero(node: &Value, defs: &Value) -> Value {
    if let Some(default) = node.get("default") {
        return default.clone();
    }
    let node = resolved(node, defs);
    match node.get("type").and_then(Value::as_str) {
        Some("integer") => 0.into(),
        Some("number") => 0.0.into(),
        Some("string") => "".into(),
        Some("boolean") => false.into(),
        Some("array") => Value::Array(Vec::new()),
        Some("object") => {
            let mut object = Value::Object(Map::new());
            fill(&mut object, node, defs);
            object
        }
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_report_leaves_null_reads_as_the_engines_default_or_zero() {
        // A client tool's report: only what the tool measured, its own groups, no histograms.
        let tool = serde_json::json!({
            "schema": "httpbench-load/1",
            "engine": {"version": null, "io": null},
            "spec": {"connections": null, "urls": null},
            "duration_s": 2.5,
            "requests": {"completed": 40, "per_second": 16.0, "sent": null},
            "status": {"2xx": null, "non_2xx": 3},
            "errors": {"connect": 1, "read": null},
            "errors_total": 1,
            "latency": {"total": {"p50_us": 899.6, "mean_us": 0.5, "hdr": null}, "connect": null},
            "h2": null,
            "timeseries": null,
            "client": {"tool": "wrk", "threads": null, "user_s": 0.5},
            "aborted": null,
        });
        let r = Report::read_any(&tool.to_string()).unwrap();
        assert_eq!((r.requests.completed, r.requests.sent), (40, 0));
        assert_eq!((r.status.s2xx, r.status.other), (0, 0));
        assert_eq!(r.errors["connect"] + r.errors["read"], 1);
        assert_eq!(
            (r.latency.total.p50_us, r.latency.total.hdr.as_str()),
            (900, "")
        );
        assert_eq!(r.latency.first_byte.hdr, "");
        // A field with a default reads as it: what the engine reads for a report without it.
        assert_eq!(r.spec.connections, crate::LoadSpec::default().connections);
        assert!(r.validation.sent);
        assert_eq!(r.latency.tls_handshake.count, 0);
        assert!(!r.latency.tls_handshake.hdr.is_empty());
        // What may be null stays so.
        assert!(r.h2.is_none() && r.open_loop.is_none() && r.host.nofile_soft.is_none());
        assert!(Report::read_any("[]").is_err());
    }
}
