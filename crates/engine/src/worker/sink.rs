//! The response parser's findings for one connection, accounted for as they come, over either
//! protocol.

use std::collections::VecDeque;

use hdrhistogram::Histogram;

use crate::http::response::{Response, ResponseSink};
use crate::spec::expects;
use crate::stats::series::SecondSample;
use crate::stats::sizes::Answers;
use crate::stats::{record_ns, Counters, ErrorClass, Latencies};

use super::conn::{Pending, Protocol};
use super::gather::Recent;
use super::Worker;

/// Receives the parser's findings for one connection.
pub(super) struct Sink<'s> {
    /// When the bytes being parsed arrived, and when we handle them, in ns since `start`.
    pub(super) at: u64,
    pub(super) now: u64,
    pub(super) measure_from: u64,
    /// Past the window's end, reading the answers still on their way (see `Worker::drain`).
    pub(super) draining: bool,
    pub(super) answers: &'s Answers,
    pub(super) expect_status: &'s [u16],
    pub(super) pending: &'s mut VecDeque<Pending>,
    pub(super) first_byte: &'s mut u64,
    pub(super) server_closing: &'s mut bool,
    pub(super) counters: &'s mut Counters,
    pub(super) latencies: &'s mut Latencies,
    pub(super) recent: &'s mut Recent,
    pub(super) series: &'s mut SecondSample,
    /// The fine series' current point's latencies, if the spec asks for the series.
    pub(super) tick_latency: Option<&'s mut Histogram<u64>>,
    pub(super) done: usize,
    /// Of `done`, HTTP/2 streams the server refused: no progress.
    pub(super) given_back: usize,
    pub(super) unsolicited: bool,
}

impl ResponseSink for Sink<'_> {
    #[inline]
    fn first_byte(&mut self) {
        *self.first_byte = self.at;
    }

    #[inline]
    fn complete(&mut self, r: &Response) {
        let Some(p) = self.pending.pop_front() else {
            self.unsolicited = true;
            return;
        };
        self.done += 1;
        if r.close {
            *self.server_closing = true;
        }
        // Never before the request went: the arrival stamp and our clock are two clocks.
        let at = self.at.max(p.sent);
        self.recent.sum += at - p.sent;
        self.recent.count += 1;
        if at >= self.measure_from {
            self.counters.answered += 1;
        }
        if p.sent < self.measure_from {
            return;
        }
        if self.draining {
            // Unanswered when the window ended: counted in flight, at the age it reached.
            self.latencies.record_in_flight(at - p.due);
            return;
        }
        let c = &mut *self.counters;
        c.head_bytes += r.head_bytes;
        c.body_bytes += r.body_bytes;
        let decoded = self.answers.decoded(p.url);
        c.encodings.record(r.coding, r.body_bytes, decoded);
        c.interim += r.interim as u64;
        let succeeded = expects(self.expect_status, r.status);
        if !self
            .answers
            .expected(p.url, r.coding, r.body_bytes, succeeded)
        {
            c.error(ErrorClass::LengthMismatch, 1);
            self.series.errors += 1;
            return;
        }
        c.completed += 1;
        c.handling_delay_ns += self.now - at;
        c.status[if (100..600).contains(&r.status) {
            (r.status / 100) as usize
        } else {
            0
        }] += 1;
        if expects(self.expect_status, r.status) {
            c.succeeded += 1;
        } else {
            *c.unexpected.entry(r.status).or_insert(0) += 1;
        }
        let l = &mut *self.latencies;
        record_ns(&mut l.total, at - p.due);
        l.sizes
            .record(&self.answers.bounds, r.body_bytes, at - p.due);
        record_ns(&mut l.service, at - p.sent);
        record_ns(&mut l.first_byte, self.first_byte.saturating_sub(p.sent));
        self.series.requests += 1;
        record_ns(&mut self.series.latency, at - p.due);
        if let Some(h) = self.tick_latency.as_deref_mut() {
            record_ns(h, at - p.due);
        }
    }
}

impl Worker<'_> {
    /// Move the fine series on to the point of now, once measuring: called where the worker
    /// reads the clock, before what it then counts.
    pub(super) fn follow_ticks(&mut self) {
        if let Some(t) = self
            .ticks
            .as_mut()
            .filter(|_| self.now >= self.measure_from)
        {
            t.at(self.now - self.measure_from, &self.counters);
        }
    }

    /// Hand connection `i`'s protocol side to `parse` with a sink that accounts for every
    /// response it completes; returns what `parse` returned and whether a response came unasked.
    pub(super) fn parse<T>(
        &mut self,
        i: usize,
        at: u64,
        parse: impl FnOnce(&mut Protocol, &mut Sink<'_>) -> T,
    ) -> (T, bool) {
        let second = self.second();
        let c = &mut self.conns[i];
        let mut sink = Sink {
            at,
            now: self.now,
            measure_from: self.measure_from,
            draining: self.draining,
            answers: &self.shared.answers,
            expect_status: &self.shared.expect_status,
            pending: &mut c.pending,
            first_byte: &mut c.first_byte,
            server_closing: &mut c.server_closing,
            counters: &mut self.counters,
            latencies: &mut self.latencies,
            recent: &mut self.recent,
            series: self.series.at(second),
            tick_latency: self.ticks.as_mut().map(|t| &mut t.latency),
            done: 0,
            given_back: 0,
            unsolicited: false,
        };
        let out = parse(&mut c.protocol, &mut sink);
        let (done, unsolicited) = (sink.done, sink.unsolicited);
        self.outstanding -= done;
        if done > sink.given_back {
            self.conns[i].reused = true;
            self.progressed();
            self.answered(i);
        }
        (out, unsolicited)
    }
}
