/* coro.h -- stackful C coroutines (asymmetric: resume / yield).
 *
 * A coroutine runs fn(arg) on its own stack.  ab_coro_resume() switches from
 * the resumer (the scheduler's main context, or another coroutine) into it;
 * ab_coro_yield() switches from inside it back to whoever resumed it.  When
 * fn returns the coroutine is done and control goes back to its resumer for
 * the last time.  Resumes nest: a coroutine may resume another one, which
 * yields back to it.
 *
 * The switch is chosen at build time (ab_coro_backend() names it):
 *   "x86_64"   core/coro_switch_x86_64.S: System V callee-saved registers
 *              rbx, rbp, r12-r15, rsp, the MXCSR and the x87 control word;
 *   "aarch64"  core/coro_switch_aarch64.S: x19-x30, sp, d8-d15 and FPCR;
 *   "ucontext" getcontext/makecontext/swapcontext (AB_CORO_UCONTEXT=1: any
 *              other CPU, or cmake -DAB_CORO_UCONTEXT=ON).  swapcontext makes
 *              a sigprocmask system call per switch: much slower.
 * Every context keeps its own floating-point control state (rounding mode,
 * exception masks); a new coroutine starts with the ABI defaults (round to
 * nearest, all exceptions masked).
 *
 * Stacks: one mmap per coroutine (MAP_NORESERVE, so pages are committed
 * lazily as the stack grows: 10,000 coroutines with 64 KiB stacks cost what
 * they touch, not 640 MiB), with one PROT_NONE guard page directly below the
 * usable stack, so an overflow faults (SIGSEGV) instead of silently writing
 * over a neighbour.  Nothing grows the stack: size it for the deepest call
 * chain the coroutine makes (sanitized builds use several times more stack).
 *
 * Units: sizes in bytes.  Return codes: 0 or a negative AB_* code
 * (ab_error.h).  Misuse that would corrupt a stack (resuming a running or
 * finished coroutine, yielding outside a coroutine, freeing a running one)
 * prints a message and aborts.
 *
 * Threads: ab_coro_current() is thread-local, so every thread runs its own
 * coroutines independently.  A suspended coroutine may be resumed on
 * another thread than the one it last ran on (it migrates: shared:N
 * resumes a connection's coroutine on whichever thread takes its event);
 * the caller makes sure one thread at a time resumes or frees it, with a
 * happens-before between them (a lock handed over), and nothing here
 * locks.  The switch keeps no thread-local state across a yield: `current`
 * is read before the switch out and set by the resumer's own thread, and
 * the thread pointer (%fs, tpidr_el0) is not part of a context, so after a
 * yield the coroutine's thread-locals and errno are those of the thread it
 * now runs on.  Code inside a coroutine must not keep the address of a
 * thread-local (or errno's) across a yield of its own frame: read them
 * after it, through a call (the compiler may reuse a thread-local's
 * address within one function).
 *
 * Sanitizers: under AddressSanitizer every switch is announced with
 * __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber, so ASan
 * follows the stack changes (and its stack-use-after-return fake stacks);
 * under ThreadSanitizer each coroutine is a TSan fiber
 * (__tsan_switch_to_fiber before every switch), so TSan keeps a shadow
 * stack per coroutine and sees a migrated coroutine's accesses in order;
 * a fiber costs TSan a few hundred KiB, so thousands of coroutines need
 * gigabytes in a TSan build.
 */
#ifndef AB_CORO_H
#define AB_CORO_H

#include <stddef.h>

#define AB_CORO_DEFAULT_STACK (64 * 1024) /* bytes, used when stack_size is 0 */
#define AB_CORO_MIN_STACK (16 * 1024)     /* smaller requests are raised to this */

typedef struct ab_coro_s ab_coro_t;

/* Creates a coroutine that will run fn(arg) on a fresh stack of stack_size
 * bytes (0 = AB_CORO_DEFAULT_STACK; rounded up to whole pages, at least
 * AB_CORO_MIN_STACK; the guard page comes on top).  It does not run until the
 * first ab_coro_resume().  On success *out owns the coroutine and its stack
 * (free with ab_coro_free) and 0 is returned.  Errors: AB_EINVAL (out or fn
 * NULL), AB_ENOMEM (malloc or mmap failed).  fn must not be longjmp'd out of;
 * when it returns the coroutine is done. */
int ab_coro_new(ab_coro_t **out, size_t stack_size, void (*fn)(void *), void *arg);

/* Switches into co (started or suspended) and returns when co yields or
 * finishes.  May be called from the thread's main context or from inside
 * another coroutine (nesting).  Aborts if co is running (it or a coroutine
 * it resumed is the caller) or done. */
void ab_coro_resume(ab_coro_t *co);

/* Suspends the running coroutine and returns to its resumer; returns when
 * the coroutine is resumed again.  Aborts outside a coroutine. */
void ab_coro_yield(void);

/* The coroutine running on this thread, or NULL in the main context. */
ab_coro_t *ab_coro_current(void);

/* 1 once fn has returned, else 0. */
int ab_coro_done(const ab_coro_t *co);

/* 1 from ab_coro_new until the first resume, else 0. */
int ab_coro_started(const ab_coro_t *co);

/* Releases co and its stack.  Allowed when co is done, never started, or
 * suspended (yielded and never to be resumed again: its stack is dropped
 * without unwinding, so whatever its frames own leaks unless the owner
 * releases it; the scheduler never does this, it cancels a task and lets
 * its function return).  Aborts if co is running.  NULL is a no-op. */
void ab_coro_free(ab_coro_t *co);

/* The usable stack of co: [*lo, *lo + *size).  The guard page is the page
 * just below *lo. */
void ab_coro_stack(const ab_coro_t *co, void **lo, size_t *size);

/* The deepest co's stack has been written so far, in bytes from its top
 * (a high-water mark: the stack starts zeroed, and the lowest non-zero
 * 8-byte word counts; a deeper frame that wrote only zeros is missed).
 * Reads the whole stack: a measurement, not for a hot path.  Any state. */
size_t ab_coro_stack_used(const ab_coro_t *co);

/* With ARKBENCH_CORO_STACK_USE=1 in the environment, ab_coro_free adds the
 * stack use of every coroutine that ran to a process-wide peak: the
 * largest ab_coro_stack_used seen (0 without the variable, or before a
 * coroutine that ran was freed).  Any thread. */
size_t ab_coro_stack_peak(void);

/* "x86_64", "aarch64" or "ucontext": the switch compiled in. */
const char *ab_coro_backend(void);

#endif
