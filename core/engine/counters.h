/* counters.h -- every counter of a run, declared once.
 *
 * AB_COUNTERS(X) calls X(name, merge, group, doc) once per counter:
 *   name   the field of the loop (ab__loop_t, written by its own thread
 *          only) and of the result (ab_result_t), and the run object's key;
 *   merge  how ab_run_case folds the loops' values: AB_MERGE_SUM or
 *          AB_MERGE_MAX;
 *   group  where the run object carries it: AB_GROUP_RUN (top level) or
 *          AB_GROUP_DATAGRAM (inside the run object's datagram table,
 *          present for datagram protocols only; docs/run-object.md) or
 *          AB_GROUP_H2 (inside its `h2` table, h2 and h2c only: the
 *          client side's connections, names without the h2_ prefix);
 *   doc    the one-line meaning docs/run-object.md shows (a spec compares
 *          the doc's counter rows with this table through core.counters()).
 * The loop and result structs expand the table inline (uint64_t fields of
 * those names), the merge and the script export (core.counters) loop over it: a new counter is
 * one line here plus whatever increments it.  All counts are messages,
 * connections or bytes as the doc says, never negative.
 *
 * Identity on every run: sent = completed + drained + timed_out +
 * message_errors + unfinished (the merge adds what is still in flight at
 * stop to unfinished).
 */
#ifndef AB_COUNTERS_H
#define AB_COUNTERS_H

#include <stdint.h>

enum { AB_MERGE_SUM = 1, AB_MERGE_MAX = 2 };
enum { AB_GROUP_RUN = 1, AB_GROUP_DATAGRAM = 2, AB_GROUP_H2 = 3 };

#define AB_COUNTERS(X)                                                                      \
  X(sent, AB_MERGE_SUM, AB_GROUP_RUN, "measure-phase messages handed to the socket")        \
  X(completed, AB_MERGE_SUM, AB_GROUP_RUN, "replies received inside [start, deadline]")     \
  X(drained, AB_MERGE_SUM, AB_GROUP_RUN,                                                    \
    "replies to measure-phase messages received after the deadline")                        \
  X(timed_out, AB_MERGE_SUM, AB_GROUP_RUN,                                                  \
    "messages whose reply did not come within `timeout` (checked when a reply arrives and "  \
    "swept the moment it is overdue, so a reply later than `timeout` is never `completed` "  \
    "or `drained`); on a stream also the messages behind it on its connection, which is "    \
    "reopened (`reconnects`)")                                                              \
  X(late, AB_MERGE_SUM, AB_GROUP_RUN,                                                       \
    "replies to measure-phase messages that came after their message's `timeout`: timed "   \
    "out, never completions or RTT samples (a stream's overdue connection is replaced, so "  \
    "only replies that beat the sweep); also in the datagram table")                        \
  X(message_errors, AB_MERGE_SUM, AB_GROUP_RUN,                                             \
    "messages lost to a connection error or a bad reply")                                   \
  X(unfinished, AB_MERGE_SUM, AB_GROUP_RUN, "messages still in flight when the run ended")  \
  X(non_success, AB_MERGE_SUM, AB_GROUP_RUN,                                                \
    "replies to measure-phase messages whose status is outside the success set (request "   \
    "mode: `request.status`, 2xx by default): completions all the same, counted in "         \
    "`completed` or `drained` with their latency, by status in the protocol's status table " \
    "and by class in `errors`; they make the run `degraded`")                               \
  X(bytes_sent, AB_MERGE_SUM, AB_GROUP_RUN,                                                 \
    "client: bytes of the measure-phase messages handed to stream connections (request "    \
    "mode: request line, headers and body; echo: whole frames), before encryption: record "  \
    "overhead and handshakes are not counted")                                              \
  X(bytes_received, AB_MERGE_SUM, AB_GROUP_RUN,                                             \
    "client: bytes of replies parsed on stream connections while the measure phase sent "    \
    "(request mode: status line, headers and body; echo: whole frames), after decryption: "  \
    "record overhead not counted (`transfer_mib_per_s` divides it by `measured_s`)")         \
  X(unsent, AB_MERGE_SUM, AB_GROUP_RUN,                                                    \
    "open loop: measure-phase messages intended before the deadline and never sent (0 in "  \
    "closed loop)")                                                                         \
  X(sent_late, AB_MERGE_SUM, AB_GROUP_RUN,                                                 \
    "open loop: of `sent`, messages intended within the wake-up lag before the deadline "    \
    "(the last 5 ms, or the loop's send-lag p99 or its wake's lateness at the deadline, if " \
    "longer) that went out after it, when the "                                              \
    "measure phase ended (the wake came late: counted sent, not "                           \
    "`unsent`; their replies are `drained`; 0 in closed loop)")                             \
  X(unsent_window_full, AB_MERGE_SUM, AB_GROUP_RUN,                                        \
    "open loop: of `unsent`, those of connections whose window was full at the end (they "  \
    "waited for a slot: the server or the window was the limit); the rest had a slot free " \
    "and the sender did not send them in time (0 in closed loop)")                          \
  X(reconnects, AB_MERGE_SUM, AB_GROUP_RUN,                                                 \
    "stream connections lost once up (a reply overdue, a reset, closed by the peer) and "    \
    "reopened in their place, counted when the new one is up (docs/execution.md says in "   \
    "which modes)")                                                                         \
  X(connect_retries, AB_MERGE_SUM, AB_GROUP_RUN,                                            \
    "first connects (or their handshakes) that failed in the connect phase (a timeout, "    \
    "refused, reset) and were tried again after a backoff, up to 6 tries per connection: "   \
    "not errors; one that fails every try is the run's error")                              \
  X(reconnects_given_up, AB_MERGE_SUM, AB_GROUP_RUN,                                        \
    "connections left closed after 5 failures in a row with no reply between (reopens "     \
    "refused, or lost again before a reply)")                                               \
  X(connections_opened, AB_MERGE_SUM, AB_GROUP_RUN,                                         \
    "connections that came up (connect and handshakes done) while the measure phase sent: "  \
    "replacements of `requests_per_connection` and reconnects alike (`connections_per_s` "   \
    "divides it by `measured_s`)")                                                          \
  X(connections_retired, AB_MERGE_SUM, AB_GROUP_RUN,                                        \
    "connections closed cleanly after their `requests_per_connection` round trips, to be "   \
    "replaced (any phase; not errors, not `reconnects`)")                                   \
  X(connections_used, AB_MERGE_SUM, AB_GROUP_RUN,                                          \
    "client connections that completed at least one measure-phase reply (a reopened one "   \
    "counts once)")                                                                         \
  X(server_closes, AB_MERGE_SUM, AB_GROUP_RUN,                                              \
    "stream connections the server closed in order after a reply that said it would "         \
    "(`Connection: close`, or a 1.0 response without keep-alive; h2: a GOAWAY with NO_ERROR " \
    "once the streams it let through answered; docs/protocols.md), any phase: each "         \
    "reopened in its place, not an error and not in `reconnects`")                           \
  X(warmup_completed, AB_MERGE_SUM, AB_GROUP_RUN,                                           \
    "warm-up replies received (their samples are dropped)")                                 \
  X(server_connections, AB_MERGE_SUM, AB_GROUP_RUN, "connections the server side accepted") \
  X(server_messages, AB_MERGE_SUM, AB_GROUP_RUN, "messages the server side answered")       \
  X(server_bytes, AB_MERGE_SUM, AB_GROUP_RUN, "message bytes the server side received")     \
  X(server_resets, AB_MERGE_SUM, AB_GROUP_RUN,                                              \
    "server role: clients that reset their connection, met by a read, a write (EPIPE after "  \
    "their FIN) or the socket's error alike (not errors; an orderly close is not counted)")   \
  X(reordered, AB_MERGE_SUM, AB_GROUP_DATAGRAM,                                             \
    "replies to measure-phase messages below the highest sequence already answered (still " \
    "complete)")                                                                            \
  X(duplicated, AB_MERGE_SUM, AB_GROUP_DATAGRAM,                                            \
    "second replies to a completed measure-phase message")                                  \
  X(server_drops, AB_MERGE_SUM, AB_GROUP_DATAGRAM,                                          \
    "datagrams the server dropped (truncated, out of memory, send failed)")                \
  X(h2_responses_1xx, AB_MERGE_SUM, AB_GROUP_H2, "final responses with a 1xx status")      \
  X(h2_responses_2xx, AB_MERGE_SUM, AB_GROUP_H2, "final responses with a 2xx status")      \
  X(h2_responses_3xx, AB_MERGE_SUM, AB_GROUP_H2, "final responses with a 3xx status")      \
  X(h2_responses_4xx, AB_MERGE_SUM, AB_GROUP_H2, "final responses with a 4xx status")      \
  X(h2_responses_5xx, AB_MERGE_SUM, AB_GROUP_H2, "final responses with a 5xx status")      \
  X(h2_rst_no_error, AB_MERGE_SUM, AB_GROUP_H2, "RST_STREAM received with NO_ERROR")       \
  X(h2_rst_protocol_error, AB_MERGE_SUM, AB_GROUP_H2,                                       \
    "RST_STREAM received with PROTOCOL_ERROR")                                              \
  X(h2_rst_internal_error, AB_MERGE_SUM, AB_GROUP_H2,                                       \
    "RST_STREAM received with INTERNAL_ERROR")                                              \
  X(h2_rst_flow_control_error, AB_MERGE_SUM, AB_GROUP_H2,                                   \
    "RST_STREAM received with FLOW_CONTROL_ERROR")                                          \
  X(h2_rst_refused_stream, AB_MERGE_SUM, AB_GROUP_H2,                                       \
    "RST_STREAM received with REFUSED_STREAM")                                              \
  X(h2_rst_cancel, AB_MERGE_SUM, AB_GROUP_H2, "RST_STREAM received with CANCEL")           \
  X(h2_rst_other, AB_MERGE_SUM, AB_GROUP_H2, "RST_STREAM received with any other code")    \
  X(h2_goaways, AB_MERGE_SUM, AB_GROUP_H2,                                                  \
    "GOAWAY frames received (each ends its connection, which reopens; NO_ERROR: in "      \
    "`server_closes`, no error)")                                                         \
  X(h2_goaway_last_stream, AB_MERGE_MAX, AB_GROUP_H2,                                       \
    "the largest last-stream-id a GOAWAY carried")                                          \
  X(h2_goaway_code, AB_MERGE_MAX, AB_GROUP_H2,                                              \
    "the largest error code a GOAWAY carried (0 NO_ERROR)")                                 \
  X(h2_goaway_unprocessed, AB_MERGE_SUM, AB_GROUP_H2,                                       \
    "streams above an orderly GOAWAY's last stream id: never processed by the peer, taken " \
    "back as never sent (not in `sent`, no error)")                                         \
  X(h2_stall_ns, AB_MERGE_SUM, AB_GROUP_H2,                                                 \
    "nanoseconds connections had body bytes to send and no flow-control window, summed "   \
    "over connections")                                                                     \
  X(h2_header_bytes_out, AB_MERGE_SUM, AB_GROUP_H2, "HEADERS payload bytes sent (HPACK)") \
  X(h2_header_bytes_in, AB_MERGE_SUM, AB_GROUP_H2, "HEADERS payload bytes received")      \
  X(h2_data_bytes_out, AB_MERGE_SUM, AB_GROUP_H2, "DATA payload bytes sent")              \
  X(h2_data_bytes_in, AB_MERGE_SUM, AB_GROUP_H2, "DATA payload bytes received")

/* Replies counted by the status code their protocol gives them (a
 * codec's own numbers, below AB_REPLY_CODES), measure-phase messages only: the loop's and the
 * result's `reply_codes[code]`, summed at the merge; written by the window
 * (ab__win_complete_coded). */
#define AB_REPLY_CODES 600

/* The struct fields: `uint64_t name;` for every counter. */
#define AB__COUNTER_FIELD(name, merge, group, doc) uint64_t name;
#define AB_COUNTER_FIELDS AB_COUNTERS(AB__COUNTER_FIELD)

#endif
