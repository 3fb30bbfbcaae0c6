//! The gather policy: how many responses a closed loop's waits let come in before it wakes, from
//! the recent service times, the requests in flight and the protocol.

use std::time::Duration;

use crate::io::Gather;

use super::Worker;

/// Sum and count of service times, in ns.
#[derive(Default)]
pub(super) struct Recent {
    pub(super) sum: u64,
    pub(super) count: u64,
}

/// How long a closed loop lets responses gather before it handles them, and how many
/// (docs/DESIGN-engine.md, "Timing and wake-ups", which has the measurements). Their latencies
/// are the kernel's arrival stamps, so only the next requests can go up to the hold later. During
/// a hold of 1/k of the mean service time the server answers about 1/k of the requests in flight
/// (Little's law) and still has the rest queued, so a short enough hold costs a bottleneck server
/// nothing; at h2o 10 x 10 over HTTP/2, holds of a fifth and a quarter served a little less than
/// an eighth in the quietest rounds.
struct GatherRule {
    /// Wake once reads of 1/`connections_share` of the connections with requests in flight
    /// are in: the rest keep the server busy meanwhile ...
    connections_share: usize,
    /// ... or 1/`service_share` of the recent mean service time after the wait began, if one
    /// is in.
    service_share: u32,
    /// No hold shorter than this.
    min_hold: Duration,
}

/// Over HTTP/1.1, and HTTP/2 with fewer than two streams in flight a connection on average.
/// Below 50 us, arming the kernel's timer for every wait cost the client more than the
/// wake-ups it saved.
const HTTP1_GATHER: GatherRule = GatherRule {
    connections_share: 4,
    service_share: 16,
    min_hold: Duration::from_micros(50),
};
/// Over HTTP/2 with two or more streams in flight a connection on average. Half the
/// connections: a read brings only the part of its connection's responses that has arrived
/// (about 2 of 10 at 10 connections x 10 streams), so the other half and the streams still
/// unanswered keep the server busy. Holds from 20 us, under HTTP/1.1's floor, because each read
/// that wakes a sleeping client costs the server an interrupt to the client's CPU, which a hold
/// ended by the client's own timer does not; an eighth of the service time, not a sixteenth,
/// because at h2o 10 x 10 a sixteenth (14 us) raised the client's CPU a request where an eighth
/// lowered it. Not measured over HTTP/1.1.
const STREAMED_GATHER: GatherRule = GatherRule {
    connections_share: 2,
    service_share: 8,
    min_hold: Duration::from_micros(20),
};
/// A wait gathers only reads that can bring this many responses: fewer are not worth a timer.
const GATHER_MIN_RESPONSES: usize = 4;
/// How long an open loop's wait lets completions gather. Its requests go at their alarms
/// whatever is in, and its latencies are the kernel's arrival stamps, so a hold delays only a
/// request waiting on its connection for the answer that frees it, by at most the hold or until
/// the next alarm. A request waiting on its connection's setup (a connect, TLS handshake
/// replies, HTTP/2's SETTINGS) would be delayed by up to the hold at each step, whose
/// completions carry no stamp its send could go back to: so there is no hold while a connection
/// of the thread is setting up (`open_gather`), which without keep-alive is nearly always, and
/// the saving is keep-alive's steady state. Answers the alarms' own wake-ups pick up no longer
/// cost a wake-up each. Against nginx at 30,000 req/s
/// over 1,000 connections with keep-alive the client's CPU a request fell from 23.1 to 17.3 us
/// (medians of 3, bench/RESULTS.md), where a wake-up on this kind of VM is the open loop's main
/// cost; 300 us saved no more.
const OPEN_HOLD: Duration = Duration::from_micros(100);

/// How an open loop with `outstanding` requests in flight gathers, `setting_up` while a
/// connection of the thread connects, shakes hands or waits for the server's SETTINGS.
fn open_gather(outstanding: usize, setting_up: bool) -> Gather {
    if setting_up {
        return Gather::NONE;
    }
    Gather {
        completions: (outstanding / HTTP1_GATHER.connections_share).max(GATHER_MIN_RESPONSES)
            as u32,
        hold: OPEN_HOLD,
    }
}

/// How a closed loop with `outstanding` requests in flight over `connections` gathers, given the
/// recent mean service time; `multiplexed` over HTTP/2. A read can bring one response over
/// HTTP/1.1 (pipelined ones are counted so too, as the rule was measured) and up to a
/// connection's streams in flight over HTTP/2, and the 4-response floor counts those, so 10
/// connections x 10 streams gather where 10 of HTTP/1.1 do not.
fn gather_for(
    outstanding: usize,
    connections: usize,
    multiplexed: bool,
    service: Duration,
) -> Gather {
    let per_read = if multiplexed {
        (outstanding / connections.max(1)).max(1)
    } else {
        1
    };
    let rule = if per_read > 1 {
        STREAMED_GATHER
    } else {
        HTTP1_GATHER
    };
    let reads = outstanding.min(connections) / rule.connections_share;
    let hold = service / rule.service_share;
    if reads < 2 || reads * per_read < GATHER_MIN_RESPONSES || hold < rule.min_hold {
        return Gather::NONE;
    }
    Gather {
        completions: reads as u32,
        hold,
    }
}

impl Worker<'_> {
    /// How many responses the next waits may gather, and for how long (see GatherRule, and
    /// OPEN_HOLD for an open loop). A closed loop's connect times, which have no kernel stamp,
    /// may be seen up to its hold late.
    pub(super) fn next_gather(&mut self) -> Gather {
        let recent = std::mem::take(&mut self.recent);
        if self.schedule.is_open() {
            let setting_up = self.conns.iter().any(|c| c.setting_up());
            return open_gather(self.outstanding, setting_up);
        }
        if recent.count == 0 {
            return self.gather;
        }
        gather_for(
            self.outstanding,
            self.conns.len(),
            self.shared.http2.is_some(),
            Duration::from_nanos(recent.sum / recent.count),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS2: Duration = Duration::from_millis(2);

    fn gathers(completions: u32, hold_us: u64) -> Gather {
        Gather {
            completions,
            hold: Duration::from_micros(hold_us),
        }
    }

    #[test]
    fn http1_gathers_from_a_quarter_of_its_connections_once_that_is_four_responses() {
        assert_eq!(gather_for(10, 10, false, MS2), Gather::NONE);
        assert_eq!(gather_for(16, 16, false, MS2), gathers(4, 125));
        assert_eq!(gather_for(100, 100, false, MS2), gathers(25, 125));
        // Pipelined responses count one a read, as before HTTP/2 came.
        assert_eq!(gather_for(128, 8, false, MS2), Gather::NONE);
    }

    #[test]
    fn http2_gathers_from_half_its_connections_counting_the_responses_a_read_brings() {
        assert_eq!(gather_for(100, 10, true, MS2), gathers(5, 250));
        assert_eq!(gather_for(10_000, 100, true, MS2), gathers(50, 250));
        // One stream a connection is HTTP/1.1's case.
        assert_eq!(gather_for(10, 10, true, MS2), Gather::NONE);
        assert_eq!(gather_for(16, 16, true, MS2), gathers(4, 125));
        // Half of few connections too: the hold bounds the wait.
        assert_eq!(gather_for(8, 4, true, MS2), gathers(2, 250));
        assert_eq!(gather_for(400, 4, true, MS2), gathers(2, 250));
        // Fewer than 2 streams in flight a connection on average: the quarter, as HTTP/1.1.
        assert_eq!(gather_for(19, 10, true, MS2), Gather::NONE);
        assert_eq!(gather_for(20, 10, true, MS2), gathers(5, 250));
    }

    #[test]
    fn an_open_loop_holds_only_while_no_connection_is_setting_up() {
        let hold = OPEN_HOLD.as_micros() as u64;
        assert_eq!(open_gather(100, false), gathers(25, hold));
        assert_eq!(open_gather(3, false), gathers(4, hold));
        // A connect, a handshake or a wait for SETTINGS would each wait out the hold.
        assert_eq!(open_gather(100, true), Gather::NONE);
    }

    #[test]
    fn no_gathering_under_a_timer_worth_arming() {
        let us = Duration::from_micros;
        assert_eq!(gather_for(100, 100, false, us(790)), Gather::NONE);
        assert_eq!(gather_for(100, 100, false, us(800)), gathers(25, 50));
        // With streams to spare, an eighth from 20 us (h2o at 10 x 10: 28 us).
        assert_eq!(gather_for(100, 10, true, us(159)), Gather::NONE);
        assert_eq!(gather_for(100, 10, true, us(160)), gathers(5, 20));
    }
}
