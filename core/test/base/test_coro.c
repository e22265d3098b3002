/* test_coro.c -- coro.h: switching, nesting, many coroutines, the guard
 * page, callee-saved and floating-point state across switches, threads,
 * and a coroutine that migrates between threads (shared:N). */
#include <errno.h>
#include <fenv.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/ab_error.h"
#include "base/coro.h"
#include "test/ab_test.h"

/* ---- values passed and order -------------------------------------------- */

typedef struct {
  int in;      /* set by main before each resume */
  int out;     /* set by the coroutine before each yield */
  int steps;
  ab_coro_t *self_seen;
} pingpong_t;

static void pingpong(void *p) {
  pingpong_t *pp = p;
  pp->self_seen = ab_coro_current();
  for (int i = 0; i < 5; i++) {
    pp->out = pp->in * 2 + i;
    pp->steps++;
    ab_coro_yield();
  }
  pp->out = -1;
}

static void test_values(void) {
  pingpong_t pp = {0};
  ab_coro_t *co = NULL;
  CHECK(ab_coro_new(&co, 0, pingpong, &pp) == 0);
  CHECK(co != NULL);
  CHECK(!ab_coro_started(co) && !ab_coro_done(co));
  CHECK(ab_coro_current() == NULL);
  for (int i = 0; i < 5; i++) {
    pp.in = 100 + i;
    ab_coro_resume(co);
    CHECK(pp.out == (100 + i) * 2 + i);
    CHECK(pp.steps == i + 1);
    CHECK(ab_coro_started(co) && !ab_coro_done(co));
    CHECK(ab_coro_current() == NULL);
  }
  ab_coro_resume(co);
  CHECK(pp.out == -1);
  CHECK(ab_coro_done(co));
  CHECK(pp.self_seen == co);
  ab_coro_free(co);

  CHECK(ab_coro_new(NULL, 0, pingpong, &pp) == AB_EINVAL);
  CHECK(ab_coro_new(&co, 0, NULL, &pp) == AB_EINVAL);
  CHECK(co == NULL);
  ab_coro_free(NULL);
}

/* ---- nesting -------------------------------------------------------------- */

static char order[64];
static size_t norder;
static ab_coro_t *co_a, *co_b;
static void note(char c) {
  if (norder < sizeof(order) - 1) order[norder++] = c;
}

static void inner_b(void *p) {
  (void)p;
  CHECK(ab_coro_current() == co_b);
  note('b');
  ab_coro_yield(); /* back to A */
  CHECK(ab_coro_current() == co_b);
  note('B');
}

static void outer_a(void *p) {
  (void)p;
  CHECK(ab_coro_current() == co_a);
  note('a');
  ab_coro_resume(co_b); /* runs b, returns on its yield */
  CHECK(ab_coro_current() == co_a);
  note('1');
  ab_coro_yield(); /* back to main */
  note('2');
  ab_coro_resume(co_b); /* b ends */
  CHECK(ab_coro_done(co_b));
  CHECK(ab_coro_current() == co_a);
  note('3');
}

static void test_nesting(void) {
  norder = 0;
  CHECK(ab_coro_new(&co_a, 0, outer_a, NULL) == 0);
  CHECK(ab_coro_new(&co_b, 0, inner_b, NULL) == 0);
  note('m');
  ab_coro_resume(co_a);
  note('M');
  CHECK(!ab_coro_done(co_a) && !ab_coro_done(co_b));
  ab_coro_resume(co_a);
  note('E');
  order[norder] = 0;
  CHECK(strcmp(order, "mab1M2B3E") == 0);
  if (strcmp(order, "mab1M2B3E") != 0) fprintf(stderr, "order: %s\n", order);
  CHECK(ab_coro_done(co_a) && ab_coro_done(co_b));
  ab_coro_free(co_a);
  ab_coro_free(co_b);
}

/* ---- 10,000 coroutines --------------------------------------------------- */

/* Under ThreadSanitizer each coroutine is a TSan fiber, a few hundred KiB
 * of its state apiece (base/coro.h): fewer there. */
#if defined(__SANITIZE_THREAD__)
#define MANY 500
#else
#define MANY 10000
#endif
#define MANY_YIELDS 10

static void many_fn(void *p) {
  int *counter = p;
  /* touch a little stack so every coroutine really uses its own */
  volatile char pad[512];
  for (size_t i = 0; i < sizeof(pad); i++) pad[i] = (char)i;
  for (int i = 0; i < MANY_YIELDS; i++) {
    (*counter)++;
    ab_coro_yield();
  }
  (*counter) += 1000 + pad[100];
}

static void test_many(void) {
  ab_coro_t **cos = calloc(MANY, sizeof(*cos));
  int *counts = calloc(MANY, sizeof(*counts));
  int made = 0;
  for (int i = 0; i < MANY; i++) {
    if (ab_coro_new(&cos[i], 64 * 1024, many_fn, &counts[i]) != 0) break;
    made++;
  }
  CHECK_EQ_U64(made, MANY);
  for (int round = 0; round <= MANY_YIELDS; round++) {
    int ok = 1;
    for (int i = 0; i < made; i++) {
      ab_coro_resume(cos[i]);
      /* all alive at once: none finishes before the last round */
      if (round < MANY_YIELDS && (counts[i] != round + 1 || ab_coro_done(cos[i]))) ok = 0;
    }
    CHECK(ok);
  }
  int ok = 1;
  for (int i = 0; i < made; i++) {
    if (!ab_coro_done(cos[i]) || counts[i] != MANY_YIELDS + 1000 + 100) ok = 0;
    ab_coro_free(cos[i]);
  }
  CHECK(ok);
  free(cos);
  free(counts);
}

/* ---- guard page ---------------------------------------------------------- */

/* Permissions ("rw-p", "---p") of the mapping holding addr, from
 * /proc/self/maps; 0 if found. */
static int perms_at(uintptr_t addr, char perms[5], uintptr_t *start, uintptr_t *end) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (f == NULL) return -1;
  char line[512];
  int found = -1;
  while (fgets(line, sizeof(line), f)) {
    unsigned long lo, hi;
    char p[5];
    if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) != 3) continue;
    if (addr >= lo && addr < hi) {
      memcpy(perms, p, 5);
      *start = lo;
      *end = hi;
      found = 0;
      break;
    }
  }
  fclose(f);
  return found;
}

static void deep_fn(void *p) {
  size_t n = *(size_t *)p;
  /* use most of the stack: it must all be usable */
  volatile char *big = __builtin_alloca(n);
  big[0] = 1;
  big[n - 1] = 2;
  for (size_t i = 0; i < n; i += 4096) big[i] = (char)i;
  ab_coro_yield();
}

static void test_guard(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t sizes[] = {0, 20000, 256 * 1024};
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    ab_coro_t *co;
    size_t use = 12 * 1024;
    CHECK(ab_coro_new(&co, sizes[k], deep_fn, &use) == 0);
    void *lo;
    size_t size;
    ab_coro_stack(co, &lo, &size);
    size_t want = sizes[k] == 0 ? AB_CORO_DEFAULT_STACK : (sizes[k] + page - 1) / page * page;
    CHECK_EQ_U64(size, want);
    CHECK((uintptr_t)lo % page == 0);
    ab_coro_resume(co); /* the stack is in use while we look */

    char perms[5];
    uintptr_t s, e;
    uintptr_t g = (uintptr_t)lo - page;
    CHECK(perms_at(g, perms, &s, &e) == 0);
    CHECK(strcmp(perms, "---p") == 0);
    CHECK(e == (uintptr_t)lo); /* the guard ends exactly where the stack starts */
    CHECK(perms_at((uintptr_t)lo - 1, perms, &s, &e) == 0 && strcmp(perms, "---p") == 0);
    CHECK(perms_at((uintptr_t)lo, perms, &s, &e) == 0);
    CHECK(strncmp(perms, "rw", 2) == 0);
    CHECK(e >= (uintptr_t)lo + size);
    CHECK(perms_at((uintptr_t)lo + size - 1, perms, &s, &e) == 0 && strncmp(perms, "rw", 2) == 0);
    ab_coro_resume(co);
    CHECK(ab_coro_done(co));
    ab_coro_free(co);
  }
  /* small requests are raised to the minimum */
  ab_coro_t *co;
  CHECK(ab_coro_new(&co, 100, deep_fn, NULL) == 0);
  void *lo;
  size_t size;
  ab_coro_stack(co, &lo, &size);
  CHECK_EQ_U64(size, AB_CORO_MIN_STACK);
  ab_coro_free(co); /* never started */
}

/* ---- callee-saved registers --------------------------------------------- */

#define MIXROUNDS 200

/* Twelve values live across every switch: more than there are callee-saved
 * registers, so some stay in registers and some are spilled -- both must
 * survive.  The other side runs the same kind of code with other values
 * meanwhile, so every register is in use on both stacks. */
#define MIX_DECL(seed)                                                        \
  uint64_t a = (seed), b = a * 3 + 1, c = b ^ 0x55, d = c + 7, e = d * 5,       \
           f = e ^ 0xf0f0, g = f + 11, h = g * 13, i2 = h ^ 0x1234,             \
           j = i2 + 17, k = j * 19, l = k ^ 0xabcdef
#define MIX_STEP()                                                            \
  do {                                                                        \
    a = a * 6364136223846793005ull + l;                                       \
    b ^= a >> 7; c += b * 3; d ^= c << 5; e += d >> 3; f ^= e * 7;            \
    g += f >> 11; h ^= g * 9; i2 += h >> 2; j ^= i2 * 5; k += j >> 13;        \
    l ^= k + a;                                                               \
  } while (0)
#define MIX_SUM() (a ^ b ^ c ^ d ^ e ^ f ^ g ^ h ^ i2 ^ j ^ k ^ l)

static uint64_t mix_reference(uint64_t seed) {
  MIX_DECL(seed);
  for (int r = 0; r < MIXROUNDS; r++) MIX_STEP();
  return MIX_SUM();
}

static void mix_fn(void *p) {
  uint64_t *io = p;
  MIX_DECL(io[0]);
  for (int r = 0; r < MIXROUNDS; r++) {
    MIX_STEP();
    ab_coro_yield();
  }
  io[1] = MIX_SUM();
}

static void test_registers(void) {
  uint64_t io1[2] = {12345, 0}, io2[2] = {987654321, 0};
  ab_coro_t *c1, *c2;
  CHECK(ab_coro_new(&c1, 0, mix_fn, io1) == 0);
  CHECK(ab_coro_new(&c2, 0, mix_fn, io2) == 0);
  MIX_DECL(424242);
  for (int r = 0; r < MIXROUNDS + 1; r++) {
    MIX_STEP();
    ab_coro_resume(c1);
    MIX_STEP();
    ab_coro_resume(c2);
  }
  uint64_t mine = MIX_SUM();
  /* main ran 2 * (MIXROUNDS + 1) steps */
  {
    MIX_DECL(424242);
    for (int r = 0; r < 2 * (MIXROUNDS + 1); r++) MIX_STEP();
    CHECK_EQ_U64(mine, MIX_SUM());
  }
  CHECK(ab_coro_done(c1) && ab_coro_done(c2));
  CHECK_EQ_U64(io1[1], mix_reference(12345));
  CHECK_EQ_U64(io2[1], mix_reference(987654321));
  ab_coro_free(c1);
  ab_coro_free(c2);
}

/* ---- floating point ------------------------------------------------------- */

static double fp_reference(double x) {
  double a = x, b = x * 0.5, c = x + 0.25, d = 1.0 / x;
  long double q = (long double)x / 3.0L;
  for (int r = 0; r < 50; r++) {
    a = a * 1.0000001 + b;
    b = b * 0.999 + c * 1e-3;
    c = c + d * 0.5;
    d = d * 0.75 + a * 1e-9;
    q = q * 1.0000001L + (long double)d;
  }
  return a + b + c + d + (double)q;
}

/* 1/3 in the current rounding mode: out of line, so the compiler cannot
 * move the division across fesetround (it assumes round-to-nearest). */
__attribute__((noinline)) static double third(void) {
  volatile double one = 1.0, three = 3.0, r;
  r = one / three;
  return r;
}

typedef struct {
  double seed, result;
  int round_ok;
} fp_io_t;

static void fp_fn(void *p) {
  fp_io_t *io = p;
  double x = io->seed;
  double a = x, b = x * 0.5, c = x + 0.25, d = 1.0 / x;
  long double q = (long double)x / 3.0L;
  for (int r = 0; r < 50; r++) {
    a = a * 1.0000001 + b;
    b = b * 0.999 + c * 1e-3;
    c = c + d * 0.5;
    d = d * 0.75 + a * 1e-9;
    q = q * 1.0000001L + (long double)d;
    ab_coro_yield();
  }
  io->result = a + b + c + d + (double)q;

  /* the rounding mode is per context */
  io->round_ok = 1;
  fesetround(FE_UPWARD);
  ab_coro_yield(); /* main checks its own mode is still to-nearest */
  if (fegetround() != FE_UPWARD) io->round_ok = 0;
  double up = third();
  fesetround(FE_TONEAREST);
  double near = third();
  if (!(up > near)) io->round_ok = 0;
}

static void test_float(void) {
  fp_io_t io = {3.75, 0, 0};
  ab_coro_t *co;
  CHECK(ab_coro_new(&co, 0, fp_fn, &io) == 0);
  double m = 1.5, n = 2.25;
  for (int r = 0; r < 50; r++) {
    m = m * 1.01 + n;
    ab_coro_resume(co);
    n = n * 0.99 + m * 1e-6;
  }
  ab_coro_resume(co); /* computes the result, sets FE_UPWARD, yields */
  CHECK(io.result == fp_reference(3.75));
  CHECK(fegetround() == FE_TONEAREST);
  CHECK(third() == 1.0 / 3.0);
  ab_coro_resume(co);
  CHECK(ab_coro_done(co));
  CHECK(io.round_ok == 1);
  double m2 = 1.5, n2 = 2.25;
  for (int r = 0; r < 50; r++) {
    m2 = m2 * 1.01 + n2;
    n2 = n2 * 0.99 + m2 * 1e-6;
  }
  CHECK(m == m2 && n == n2);
  ab_coro_free(co);
}

/* ---- freeing a suspended coroutine ---------------------------------------- */

static void forever(void *p) {
  int *n = p;
  for (;;) {
    (*n)++;
    ab_coro_yield();
  }
}

static void test_free_suspended(void) {
  int n = 0;
  for (int k = 0; k < 100; k++) {
    ab_coro_t *co;
    CHECK(ab_coro_new(&co, 0, forever, &n) == 0);
    ab_coro_resume(co);
    ab_coro_resume(co);
    ab_coro_free(co); /* dropped mid-function */
  }
  CHECK(n == 200);
}

/* ---- threads -------------------------------------------------------------- */

typedef struct {
  int ok;
  int id;
} thr_t;

static void thr_fn(void *p) {
  int *v = p;
  for (int i = 0; i < 100; i++) {
    (*v)++;
    ab_coro_yield();
  }
}

static void *thread_main(void *p) {
  thr_t *t = p;
  t->ok = 1;
  ab_coro_t *cos[50];
  int vals[50] = {0};
  for (int i = 0; i < 50; i++)
    if (ab_coro_new(&cos[i], 0, thr_fn, &vals[i]) != 0) t->ok = 0;
  if (!t->ok) return NULL;
  for (int r = 0; r <= 100; r++)
    for (int i = 0; i < 50; i++) {
      if (ab_coro_current() != NULL) t->ok = 0;
      ab_coro_resume(cos[i]);
    }
  for (int i = 0; i < 50; i++) {
    if (!ab_coro_done(cos[i]) || vals[i] != 100) t->ok = 0;
    ab_coro_free(cos[i]);
  }
  return NULL;
}

static void test_threads(void) {
  pthread_t th[4];
  thr_t st[4];
  for (int i = 0; i < 4; i++) {
    st[i].id = i;
    st[i].ok = 0;
    CHECK(pthread_create(&th[i], NULL, thread_main, &st[i]) == 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK(st[i].ok == 1);
  }
}

/* ---- migration: resumed on another thread than it yielded on ------------ */

typedef struct {
  ab_coro_t *co;
  pthread_t seen[3];   /* the thread each step ran on */
  int errno_seen[3];   /* errno on that thread at the step's start */
  int current_ok;      /* ab_coro_current() was the coroutine at every step */
  int after_ok;        /* on the resuming thread after the resume */
} mig_t;

/* errno and pthread_self() are "const" functions of the thread to the
 * compiler: read directly in a loop that yields, their first value would
 * be reused after a migration (coro.h, Threads).  Through a volatile
 * function pointer each step reads the thread it runs on now. */
static int *errno_here(void) { return &errno; }
static pthread_t self_here(void) { return pthread_self(); }
static int *(*volatile errno_loc)(void) = errno_here;
static pthread_t (*volatile self_now)(void) = self_here;

static void mig_fn(void *p) {
  mig_t *m = p;
  for (int i = 0; i < 3; i++) {
    m->seen[i] = self_now();
    m->errno_seen[i] = *errno_loc(); /* the running thread's, not the last one's */
    if (ab_coro_current() != m->co) m->current_ok = 0;
    *errno_loc() = 100 + i;
    ab_coro_yield();
  }
}

static void *mig_thread(void *p) {
  mig_t *m = p;
  errno = 7;
  ab_coro_resume(m->co);
  /* the coroutine's errno write was this thread's; it left no current */
  if (errno != 100 + (m->seen[1] == pthread_self() ? 1 : 0) || ab_coro_current() != NULL)
    m->after_ok = 0;
  return NULL;
}

static void test_migrate(void) {
  mig_t m;
  memset(&m, 0, sizeof(m));
  m.current_ok = m.after_ok = 1;
  CHECK(ab_coro_new(&m.co, 0, mig_fn, &m) == 0);
  pthread_t a, b;
  CHECK(pthread_create(&a, NULL, mig_thread, &m) == 0); /* step 0 on a */
  pthread_join(a, NULL);
  CHECK(pthread_create(&b, NULL, mig_thread, &m) == 0); /* step 1 on b */
  pthread_join(b, NULL);
  errno = 9;
  ab_coro_resume(m.co); /* step 2 here */
  CHECK(errno == 102);
  CHECK(ab_coro_current() == NULL);
  ab_coro_resume(m.co); /* ends */
  CHECK(ab_coro_done(m.co));
  CHECK(pthread_equal(m.seen[0], a) && pthread_equal(m.seen[1], b));
  CHECK(pthread_equal(m.seen[2], pthread_self()));
  CHECK(m.errno_seen[0] == 7 && m.errno_seen[1] == 7 && m.errno_seen[2] == 9);
  CHECK(m.current_ok == 1 && m.after_ok == 1);
  ab_coro_free(m.co);
}

/* ---- misuse aborts --------------------------------------------------------- */

static void test_misuse(void) {
  pid_t pid = fork();
  if (pid == 0) {
    fclose(stderr); /* the abort message is expected */
    ab_coro_yield(); /* outside a coroutine */
    _exit(0);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

/* ---- stack use (the measurement behind coroutine_stack) ----------------- */

static void dig(void *p) {
  size_t n = *(size_t *)p;
  volatile uint8_t buf[n]; /* n bytes deep, the yield's frames below them */
  for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)(i | 1);
  ab_coro_yield();
  (void)buf[0];
}

static void test_stack_use(void) {
  size_t sizes[] = {1024, 12 * 1024, 24 * 1024};
  size_t prev = 0;
  for (size_t k = 0; k < 3; k++) {
    ab_coro_t *co = NULL;
    CHECK(ab_coro_new(&co, 64 * 1024, dig, &sizes[k]) == 0);
    size_t fresh = ab_coro_stack_used(co);
    CHECK(fresh <= 512); /* the first frame only */
    ab_coro_resume(co);
    size_t used = ab_coro_stack_used(co);
    /* the n bytes written at least, and not much more (the frames above:
     * the trampoline's and dig's own, well under 4 KiB) */
    CHECK(used >= sizes[k]);
    CHECK(used <= sizes[k] + 4096);
    CHECK(used >= prev); /* deeper writes, higher mark */
    prev = used;
    ab_coro_resume(co);
    CHECK(ab_coro_done(co));
    ab_coro_free(co);
    /* ARKBENCH_CORO_STACK_USE is set by main: the peak follows */
    CHECK(ab_coro_stack_peak() >= used);
  }
  /* never started: not counted, nothing read beyond the first frame */
  ab_coro_t *co = NULL;
  size_t before = ab_coro_stack_peak();
  CHECK(ab_coro_new(&co, 0, dig, &sizes[0]) == 0);
  ab_coro_free(co);
  CHECK(ab_coro_stack_peak() == before);
}

int main(void) {
  /* before any ab_coro_free: the variable is read once */
  setenv("ARKBENCH_CORO_STACK_USE", "1", 1);
  printf("coroutine switch: %s\n", ab_coro_backend());
  test_values();
  test_nesting();
  test_many();
  test_guard();
  test_registers();
  test_float();
  test_free_suspended();
  test_threads();
  test_migrate();
  test_misuse();
  test_stack_use();
  TEST_DONE();
}
