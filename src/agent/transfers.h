/* SPDX-License-Identifier: MIT */
/* Transfers our signal must not cut short.
 *
 * A blocking write to a pipe, a tty or a stream socket, or a recv that waits for all
 * (MSG_WAITALL), returns a short count when a signal handler runs after part of the data
 * went through, SA_RESTART or not. Unprofiled, only the program's own signals do that; many
 * programs (CPython's sys.stdout.write among them) do not loop on short writes and lose the
 * rest. The interposers here keep the EINTR retry of eintr.c and add one thing: when the
 * call came back short, the agent's handler ran during it and none of the program's did
 * (eintr.h's rule), they move the rest on the program's behalf and return the total, as the
 * kernel would have without us. A full transfer costs what it did before: one comparison of
 * two thread-local counters. */
#ifndef WP_TRANSFERS_H
#define WP_TRANSFERS_H

/* Non-zero while this thread runs a piece of a transfer the agent is finishing: a program
 * signal arriving then ends the transfer even under SA_RESTART (signals.c). */
extern __thread int wp_transfer_finishing __attribute__((tls_model("initial-exec")));

/* Resolves the real libc functions; called from the constructor (interposers also resolve
 * lazily if the program calls them before that). */
void wp_transfers_init(void);

#endif
