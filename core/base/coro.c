/* coro.c -- see coro.h.
 *
 * The assembly switch (core/coro_switch_<cpu>.S) is one function,
 *   void ab__coro_switch(void **save_sp, void *load_sp);
 * which pushes the callee-saved state on the current stack, stores the stack
 * pointer in *save_sp, loads load_sp and pops the state saved there.  A new
 * coroutine's stack is prepared here so that its first switch-in "returns"
 * into ab__coro_trampoline with the coroutine in a callee-saved register.
 */
#include "base/coro.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/ab_error.h"

#if defined(AB_CORO_UCONTEXT)
#include <ucontext.h>
#elif !defined(__x86_64__) && !defined(__aarch64__)
#error "no assembly coroutine switch for this CPU: build with AB_CORO_UCONTEXT=1"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define AB_CORO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AB_CORO_ASAN 1
#endif
#endif
#if defined(AB_CORO_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

/* ThreadSanitizer: each coroutine is a TSan fiber (its own shadow stack and
 * clock), announced before every switch; the switch synchronises the two
 * sides, as the hand-over of a coroutine between threads does (shared:N:
 * under the connection's lock). */
#if defined(__SANITIZE_THREAD__)
#define AB_CORO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define AB_CORO_TSAN 1
#endif
#endif
#if defined(AB_CORO_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

enum { CORO_NEW, CORO_SUSPENDED, CORO_RUNNING, CORO_DONE };

struct ab_coro_s {
#if defined(AB_CORO_UCONTEXT)
  ucontext_t ctx;  /* the coroutine while it is not running */
  ucontext_t back; /* its resumer while it runs */
#else
  void *sp;      /* the coroutine's saved stack pointer while it is not running */
  void *back_sp; /* its resumer's saved stack pointer while it runs */
#endif
  ab_coro_t *resumer; /* coroutine that resumed it (NULL: main context) */
  void (*fn)(void *);
  void *arg;
  int state;
  void *map; /* mmap: guard page + stack */
  size_t map_size;
  void *stack_lo; /* usable stack: [stack_lo, stack_lo + stack_size) */
  size_t stack_size;
#if defined(AB_CORO_ASAN)
  void *fake_stack;        /* its ASan fake stack while suspended */
  const void *back_bottom; /* the resumer's stack, learnt at every switch-in */
  size_t back_size;
#endif
#if defined(AB_CORO_TSAN)
  void *tsan_fiber; /* this coroutine's */
  void *tsan_back;  /* its resumer's, learnt at every resume */
#endif
};

static _Thread_local ab_coro_t *current;

static void die(const char *msg) {
  fprintf(stderr, "arkbench: coroutine misuse: %s\n", msg);
  abort();
}

#if !defined(AB_CORO_UCONTEXT)
void ab__coro_switch(void **save_sp, void *load_sp);
void ab__coro_trampoline(void);
#define SWITCH_IN(co) ab__coro_switch(&(co)->back_sp, (co)->sp)
#define SWITCH_OUT(co) ab__coro_switch(&(co)->sp, (co)->back_sp)
#else
#define SWITCH_IN(co) swapcontext(&(co)->back, &(co)->ctx)
#define SWITCH_OUT(co) swapcontext(&(co)->ctx, &(co)->back)
#endif

/* First code on the new stack: runs fn and leaves for good. */
static void coro_main(ab_coro_t *co) {
#if defined(AB_CORO_ASAN)
  __sanitizer_finish_switch_fiber(NULL, &co->back_bottom, &co->back_size);
#endif
  co->fn(co->arg);
  co->state = CORO_DONE;
#if defined(AB_CORO_ASAN)
  /* NULL: this stack is left for good, ASan may drop its fake stack */
  __sanitizer_start_switch_fiber(NULL, co->back_bottom, co->back_size);
#endif
#if defined(AB_CORO_TSAN)
  __tsan_switch_to_fiber(co->tsan_back, 0);
#endif
  SWITCH_OUT(co);
  die("a finished coroutine was resumed");
}

#if defined(AB_CORO_UCONTEXT)
/* makecontext passes int arguments only: the pointer comes in two halves */
static void uc_entry(unsigned hi, unsigned lo) {
  coro_main((ab_coro_t *)(((uintptr_t)hi << 32) | (uintptr_t)lo));
}
#endif

static int init_context(ab_coro_t *co) {
  uintptr_t top = ((uintptr_t)co->stack_lo + co->stack_size) & ~(uintptr_t)15;
#if defined(AB_CORO_UCONTEXT)
  (void)top;
  if (getcontext(&co->ctx) != 0) return AB_ENOMEM;
  co->ctx.uc_stack.ss_sp = co->stack_lo;
  co->ctx.uc_stack.ss_size = co->stack_size;
  co->ctx.uc_link = NULL;
  uintptr_t p = (uintptr_t)co;
  makecontext(&co->ctx, (void (*)(void))uc_entry, 2, (unsigned)(p >> 32),
              (unsigned)(p & 0xffffffffu));
#elif defined(__x86_64__)
  /* What ab__coro_switch pops, lowest address first:
   *   [0] MXCSR (u32), x87 control word (u16)   [8] r15  [16] r14
   *   [24] r13 = coro_main   [32] r12 = co   [40] rbx   [48] rbp = 0
   *   [56] return address = ab__coro_trampoline
   * After its ret, rsp = sp + 64 must be 16-aligned for the trampoline's
   * call (the System V rule at a call instruction). */
  uint64_t *f = (uint64_t *)(top - 80);
  memset(f, 0, 80);
  f[0] = 0x1F80u | ((uint64_t)0x037Fu << 32); /* ABI default MXCSR, x87 CW */
  f[3] = (uint64_t)(uintptr_t)coro_main;
  f[4] = (uint64_t)(uintptr_t)co;
  f[7] = (uint64_t)(uintptr_t)ab__coro_trampoline;
  co->sp = f;
#elif defined(__aarch64__)
  /* What ab__coro_switch loads (176 bytes, sp stays 16-aligned):
   *   [0] x19 = co, x20 = coro_main  [16..79] x21-x28
   *   [80] x29 = 0 (end of the frame chain), x30 = ab__coro_trampoline
   *   [96..159] d8-d15   [160] FPCR = 0 (ABI default) */
  uint64_t *f = (uint64_t *)(top - 176);
  memset(f, 0, 176);
  f[0] = (uint64_t)(uintptr_t)co;
  f[1] = (uint64_t)(uintptr_t)coro_main;
  f[11] = (uint64_t)(uintptr_t)ab__coro_trampoline;
  co->sp = f;
#endif
  return 0;
}

int ab_coro_new(ab_coro_t **out, size_t stack_size, void (*fn)(void *), void *arg) {
  if (out == NULL) return AB_EINVAL;
  *out = NULL;
  if (fn == NULL) return AB_EINVAL;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (stack_size == 0) stack_size = AB_CORO_DEFAULT_STACK;
  if (stack_size < AB_CORO_MIN_STACK) stack_size = AB_CORO_MIN_STACK;
  if (stack_size > SIZE_MAX / 2) return AB_EINVAL;
  stack_size = (stack_size + page - 1) & ~(page - 1);

  ab_coro_t *co = calloc(1, sizeof(*co));
  if (co == NULL) return AB_ENOMEM;
  co->map_size = stack_size + page;
  co->map = mmap(NULL, co->map_size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (co->map == MAP_FAILED) {
    free(co);
    return AB_ENOMEM;
  }
  /* the guard: the page below the stack, which grows down into it */
  if (mprotect(co->map, page, PROT_NONE) != 0) {
    munmap(co->map, co->map_size);
    free(co);
    return AB_ENOMEM;
  }
  co->stack_lo = (char *)co->map + page;
  co->stack_size = stack_size;
  co->fn = fn;
  co->arg = arg;
  co->state = CORO_NEW;
  int rc = init_context(co);
  if (rc != 0) {
    munmap(co->map, co->map_size);
    free(co);
    return rc;
  }
#if defined(AB_CORO_TSAN)
  co->tsan_fiber = __tsan_create_fiber(0);
#endif
  *out = co;
  return 0;
}

void ab_coro_resume(ab_coro_t *co) {
  if (co == NULL) die("ab_coro_resume(NULL)");
  if (co->state == CORO_RUNNING) die("ab_coro_resume of a running coroutine");
  if (co->state == CORO_DONE) die("ab_coro_resume of a finished coroutine");
  co->resumer = current;
  current = co;
  co->state = CORO_RUNNING;
#if defined(AB_CORO_ASAN)
  void *fake = NULL; /* this context's fake stack, kept on its own stack */
  __sanitizer_start_switch_fiber(&fake, co->stack_lo, co->stack_size);
#endif
#if defined(AB_CORO_TSAN)
  co->tsan_back = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(co->tsan_fiber, 0);
#endif
  SWITCH_IN(co);
#if defined(AB_CORO_ASAN)
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
  current = co->resumer;
}

void ab_coro_yield(void) {
  ab_coro_t *co = current;
  if (co == NULL) die("ab_coro_yield outside a coroutine");
  co->state = CORO_SUSPENDED;
#if defined(AB_CORO_ASAN)
  __sanitizer_start_switch_fiber(&co->fake_stack, co->back_bottom, co->back_size);
#endif
#if defined(AB_CORO_TSAN)
  __tsan_switch_to_fiber(co->tsan_back, 0);
#endif
  SWITCH_OUT(co);
#if defined(AB_CORO_ASAN)
  /* the resumer may be another context than last time: learn its stack */
  __sanitizer_finish_switch_fiber(co->fake_stack, &co->back_bottom, &co->back_size);
#endif
}

ab_coro_t *ab_coro_current(void) { return current; }

int ab_coro_done(const ab_coro_t *co) { return co->state == CORO_DONE; }

int ab_coro_started(const ab_coro_t *co) { return co->state != CORO_NEW; }

/* ARKBENCH_CORO_STACK_USE set (non-empty, not "0"): every coroutine freed
 * adds its stack's high-water mark to the process's peak (read once). */
static int track_use(void) {
  static atomic_int on = -1;
  int v = atomic_load_explicit(&on, memory_order_relaxed);
  if (v < 0) {
    const char *e = getenv("ARKBENCH_CORO_STACK_USE");
    v = e != NULL && e[0] != 0 && strcmp(e, "0") != 0;
    atomic_store_explicit(&on, v, memory_order_relaxed);
  }
  return v;
}
static atomic_size_t stack_peak;

#if defined(AB_CORO_ASAN)
__attribute__((no_sanitize_address))
#endif
size_t ab_coro_stack_used(const ab_coro_t *co) {
  /* the stack grows down from stack_lo + stack_size; the mapping starts
   * zeroed, so the lowest non-zero word is the deepest one written */
  const uint64_t *w = (const uint64_t *)co->stack_lo;
  size_t n = co->stack_size / sizeof(*w), i = 0;
  while (i < n && w[i] == 0) i++;
  return (n - i) * sizeof(*w);
}

size_t ab_coro_stack_peak(void) { return atomic_load(&stack_peak); }

void ab_coro_free(ab_coro_t *co) {
  if (co == NULL) return;
  if (co->state == CORO_RUNNING) die("ab_coro_free of a running coroutine");
#if defined(AB_CORO_ASAN)
  /* frames that never returned (coro_main's, a suspended coroutine's) leave
   * poisoned redzones in the shadow; a later mapping at this address must
   * not inherit them */
  __asan_unpoison_memory_region(co->stack_lo, co->stack_size);
#endif
#if defined(AB_CORO_TSAN)
  __tsan_destroy_fiber(co->tsan_fiber);
#endif
  if (co->state != CORO_NEW && track_use()) {
    size_t used = ab_coro_stack_used(co), peak = atomic_load(&stack_peak);
    while (used > peak && !atomic_compare_exchange_weak(&stack_peak, &peak, used)) {}
  }
  munmap(co->map, co->map_size);
  free(co);
}

void ab_coro_stack(const ab_coro_t *co, void **lo, size_t *size) {
  *lo = co->stack_lo;
  *size = co->stack_size;
}

const char *ab_coro_backend(void) {
#if defined(AB_CORO_UCONTEXT)
  return "ucontext";
#elif defined(__x86_64__)
  return "x86_64";
#else
  return "aarch64";
#endif
}
