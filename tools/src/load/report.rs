//! The end-of-run report: a table per operation, ratios to the ceiling, the driver's
//! CPU, the thresholds' verdict, and the same as JSON.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use serde::Serialize;

use super::driver::OpStats;

/// One operation's figures (latencies in milliseconds).
#[derive(Debug, Clone, Serialize)]
pub struct OpReport {
    pub op: String,
    pub count: u64,
    pub errors: u64,
    pub errors_by_code: BTreeMap<String, u64>,
    pub req_per_s: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// A held request (long-poll): its latency is how long it was held.
    pub held: bool,
    /// `req_per_s` ÷ the ceiling's, and `p50_ms` ÷ the ceiling's, with `--ceiling`.
    pub throughput_vs_ceiling: Option<f64>,
    pub p50_vs_ceiling: Option<f64>,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scenario: String,
    pub target: String,
    pub users: usize,
    pub pacing: String,
    pub duration_s: f64,
    pub ops: Vec<OpReport>,
    pub ceiling: Option<OpReport>,
    /// CPU seconds of the driver's threads, and their share of one core over the run.
    pub driver_cpu_s: Option<f64>,
    pub driver_cpu_percent_of_core: Option<f64>,
    /// CPU seconds of the whole process (with the in-process server, when there is one).
    pub process_cpu_s: Option<f64>,
    pub total_requests: u64,
    pub total_errors: u64,
    pub error_rate_percent: f64,
    /// The highest p99 of the operations that are not held.
    pub worst_p99_ms: f64,
    pub max_p99_ms: f64,
    pub max_error_rate_percent: f64,
    pub passed: bool,
    pub failures: Vec<String>,
}

fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// An operation's figures over `measured`.
pub fn op_report(op: &str, s: &OpStats, measured: Duration) -> OpReport {
    let q = |p: f64| ms(s.hist.value_at_quantile(p));
    OpReport {
        op: op.to_owned(),
        count: s.count,
        errors: s.error_count(),
        errors_by_code: s.errors.clone(),
        req_per_s: s.count as f64 / measured.as_secs_f64().max(1e-9),
        p50_ms: q(0.5),
        p90_ms: q(0.9),
        p99_ms: q(0.99),
        p999_ms: q(0.999),
        max_ms: ms(s.hist.max()),
        held: s.held,
        throughput_vs_ceiling: None,
        p50_vs_ceiling: None,
    }
}

impl Report {
    /// Fills in the ratios to the ceiling, the totals and the verdict.
    pub fn finish(&mut self) {
        if let Some(c) = &self.ceiling {
            for op in &mut self.ops {
                op.throughput_vs_ceiling = Some(op.req_per_s / c.req_per_s.max(1e-9));
                op.p50_vs_ceiling = Some(op.p50_ms / c.p50_ms.max(1e-9));
            }
        }
        self.total_requests = self.ops.iter().map(|o| o.count).sum();
        self.total_errors = self.ops.iter().map(|o| o.errors).sum();
        self.error_rate_percent =
            100.0 * self.total_errors as f64 / (self.total_requests.max(1)) as f64;
        self.worst_p99_ms = self
            .ops
            .iter()
            .filter(|o| !o.held)
            .map(|o| o.p99_ms)
            .fold(0.0, f64::max);
        self.failures.clear();
        if self.total_requests == 0 {
            self.failures.push("no request was answered".into());
        }
        for op in self.ops.iter().filter(|o| !o.held) {
            if op.p99_ms > self.max_p99_ms {
                self.failures.push(format!(
                    "{}: p99 {:.1} ms over the {:.1} ms limit",
                    op.op, op.p99_ms, self.max_p99_ms
                ));
            }
        }
        if self.error_rate_percent > self.max_error_rate_percent {
            self.failures.push(format!(
                "error rate {:.4} % over the {:.4} % limit",
                self.error_rate_percent, self.max_error_rate_percent
            ));
        }
        self.passed = self.failures.is_empty();
    }

    /// The report as a text table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\nhearth load: scenario {}, {} users, {}, {:.1} s measured, target {}\n",
            self.scenario, self.users, self.pacing, self.duration_s, self.target
        );
        let ratios = self.ceiling.is_some();
        let _ = write!(
            out,
            "{:<28} {:>9} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "operation",
            "count",
            "errors",
            "req/s",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms"
        );
        if ratios {
            let _ = write!(out, " {:>10} {:>9}", "req/s ×c", "p50 ×c");
        }
        out.push('\n');
        let rows = self.ops.iter().chain(self.ceiling.iter());
        for o in rows {
            let name = if o.held {
                format!("{} [held]", o.op)
            } else {
                o.op.clone()
            };
            let _ = write!(
                out,
                "{:<28} {:>9} {:>7} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                name,
                o.count,
                o.errors,
                o.req_per_s,
                o.p50_ms,
                o.p90_ms,
                o.p99_ms,
                o.p999_ms,
                o.max_ms
            );
            if let (Some(t), Some(p)) = (o.throughput_vs_ceiling, o.p50_vs_ceiling) {
                let _ = write!(out, " {t:>10.3} {p:>9.2}");
            }
            out.push('\n');
        }
        for o in &self.ops {
            for (code, n) in &o.errors_by_code {
                let _ = writeln!(out, "  errors {}: {code} × {n}", o.op);
            }
        }
        if ratios {
            let _ = writeln!(
                out,
                "\n×c: ratio to the ceiling (a minimal actix-web handler answering Zulip's success body, same driver, same pacing)"
            );
        }
        if let (Some(d), Some(pct)) = (self.driver_cpu_s, self.driver_cpu_percent_of_core) {
            let _ = write!(out, "\ndriver CPU: {d:.2} s ({pct:.0} % of one core)");
            if let Some(p) = self.process_cpu_s {
                let _ = write!(out, "; whole process {p:.2} s");
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "\nrequests {}, errors {} ({:.4} %, limit {:.4} %); worst p99 {:.2} ms (limit {:.1} ms)",
            self.total_requests,
            self.total_errors,
            self.error_rate_percent,
            self.max_error_rate_percent,
            self.worst_p99_ms,
            self.max_p99_ms
        );
        if self.passed {
            let _ = writeln!(out, "PASS");
        } else {
            for f in &self.failures {
                let _ = writeln!(out, "FAIL: {f}");
            }
        }
        out
    }
}
