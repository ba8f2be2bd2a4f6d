/* ember kernel library: the thread pool of a multi-threaded bundle (--threads N; host and Linux only).
 * The one part of a bundle that is not freestanding: it needs POSIX threads (link with -pthread). */

/*@kernel ember_tp requires ember_prelude*/
/* A pool of EMBER_THREADS - 1 workers beside the calling thread, in static storage (nothing is
 * allocated by the bundle; the workers start on the first call that wants them, or again after
 * NAME_shutdown). A divided node's parts are fixed at compile time (ember/ops/parallel.py); a call
 * hands them out as part p -> thread p % T, the caller being thread 0, and waits for all of them.
 *
 * Re-entrancy: the workers serve one call at a time, the one that holds `ember_tp_owner`. A call
 * that finds it taken (another thread is running this bundle on its own buffers) computes every part
 * itself, in order: the same partition, so the same results, on one thread. Each part has its own
 * scratch, so nothing else is shared.
 *
 * Waiting: a worker that finished a part spins briefly for the next one (nodes follow each other
 * within microseconds) and then sleeps on a condition variable; the caller does the same for the
 * workers' acknowledgements. Every worker acknowledges every job, even one it has no part of, so the
 * job description is only rewritten once nobody can still be reading it. */
#include <pthread.h>

#ifndef EMBER_THREADS
#define EMBER_THREADS 2 /* NAME.c defines it first: the bundle's --threads */
#endif
#if defined(__x86_64__) || defined(__i386__)
#define EMBER_TP_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__) || (defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7)
#define EMBER_TP_PAUSE() __asm__ __volatile__("yield")
#else
#define EMBER_TP_PAUSE() ((void)0)
#endif
#define EMBER_TP_SPIN 2000

typedef void (*ember_tp_task)(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations, int part);

static pthread_mutex_t ember_tp_owner = PTHREAD_MUTEX_INITIALIZER; /* held by the call being served */
static pthread_mutex_t ember_tp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ember_tp_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t ember_tp_done = PTHREAD_COND_INITIALIZER;
static pthread_t ember_tp_tid[EMBER_THREADS];
static unsigned ember_tp_seen0[EMBER_THREADS]; /* the job count each worker started at */
static int ember_tp_started;                        /* workers running (changed by the owner only) */
static int ember_tp_want = EMBER_THREADS;      /* threads a call uses (atomic) */
static unsigned ember_tp_gen;                       /* jobs handed out so far (atomic) */
static int ember_tp_pending;                        /* acknowledgements the current job awaits (atomic) */
static int ember_tp_quit;                           /* (atomic) */
static struct {
    ember_tp_task fn;
    uint8_t *c, *m, *a;
    int parts, threads;
} ember_tp_job;

static void *ember_tp_worker(void *arg) {
    const int id = (int)(intptr_t)arg;
    unsigned seen = ember_tp_seen0[id];
    for (;;) {
        int spin, p;
        for (spin = 0; spin < EMBER_TP_SPIN && __atomic_load_n(&ember_tp_gen, __ATOMIC_ACQUIRE) == seen; ++spin)
            EMBER_TP_PAUSE();
        if (__atomic_load_n(&ember_tp_gen, __ATOMIC_ACQUIRE) == seen) {
            pthread_mutex_lock(&ember_tp_mu);
            while (__atomic_load_n(&ember_tp_gen, __ATOMIC_ACQUIRE) == seen &&
                   !__atomic_load_n(&ember_tp_quit, __ATOMIC_ACQUIRE))
                pthread_cond_wait(&ember_tp_wake, &ember_tp_mu);
            pthread_mutex_unlock(&ember_tp_mu);
        }
        if (__atomic_load_n(&ember_tp_quit, __ATOMIC_ACQUIRE)) return 0;
        seen = __atomic_load_n(&ember_tp_gen, __ATOMIC_ACQUIRE);
        for (p = id; id < ember_tp_job.threads && p < ember_tp_job.parts; p += ember_tp_job.threads)
            ember_tp_job.fn(ember_tp_job.c, ember_tp_job.m, ember_tp_job.a, p);
        if (__atomic_sub_fetch(&ember_tp_pending, 1, __ATOMIC_ACQ_REL) == 0) {
            pthread_mutex_lock(&ember_tp_mu);
            pthread_cond_signal(&ember_tp_done);
            pthread_mutex_unlock(&ember_tp_mu);
        }
    }
}

/* At the start of a call: the number of threads it runs its parts on when it owns the pool, 0 when
 * it runs alone (one thread wanted, or another call owns the pool). */
static int ember_tp_enter(void) {
    const int want = __atomic_load_n(&ember_tp_want, __ATOMIC_RELAXED);
    if (want <= 1 || pthread_mutex_trylock(&ember_tp_owner) != 0) return 0;
    while (ember_tp_started < want - 1) {
        const int id = ember_tp_started + 1;
        ember_tp_seen0[id] = __atomic_load_n(&ember_tp_gen, __ATOMIC_RELAXED);
        if (pthread_create(&ember_tp_tid[id], 0, ember_tp_worker, (void *)(intptr_t)id) != 0) break;
        ember_tp_started = id;
    }
    return want < ember_tp_started + 1 ? want : ember_tp_started + 1;
}

static void ember_tp_leave(int threads) {
    if (threads > 0) pthread_mutex_unlock(&ember_tp_owner);
}

static void ember_tp_run(int threads, ember_tp_task fn, int parts, uint8_t *c, uint8_t *m, uint8_t *a) {
    int p, spin;
    if (threads <= 1) {
        for (p = 0; p < parts; ++p) fn(c, m, a, p);
        return;
    }
    ember_tp_job.fn = fn;
    ember_tp_job.c = c;
    ember_tp_job.m = m;
    ember_tp_job.a = a;
    ember_tp_job.parts = parts;
    ember_tp_job.threads = threads;
    __atomic_store_n(&ember_tp_pending, ember_tp_started, __ATOMIC_RELAXED);
    pthread_mutex_lock(&ember_tp_mu);
    __atomic_add_fetch(&ember_tp_gen, 1u, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&ember_tp_wake);
    pthread_mutex_unlock(&ember_tp_mu);
    for (p = 0; p < parts; p += threads) fn(c, m, a, p);
    for (spin = 0; spin < EMBER_TP_SPIN && __atomic_load_n(&ember_tp_pending, __ATOMIC_ACQUIRE) != 0; ++spin)
        EMBER_TP_PAUSE();
    if (__atomic_load_n(&ember_tp_pending, __ATOMIC_ACQUIRE) != 0) {
        pthread_mutex_lock(&ember_tp_mu);
        while (__atomic_load_n(&ember_tp_pending, __ATOMIC_ACQUIRE) != 0)
            pthread_cond_wait(&ember_tp_done, &ember_tp_mu);
        pthread_mutex_unlock(&ember_tp_mu);
    }
}

static int ember_tp_set_threads(int n) {
    n = n < 1 ? 1 : n > EMBER_THREADS ? EMBER_THREADS : n;
    __atomic_store_n(&ember_tp_want, n, __ATOMIC_RELAXED);
    return n;
}

/* Joins the workers (after the call that owns them, if any, returns); the next call starts them again. */
static void ember_tp_shutdown(void) {
    int i;
    pthread_mutex_lock(&ember_tp_owner);
    pthread_mutex_lock(&ember_tp_mu);
    __atomic_store_n(&ember_tp_quit, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&ember_tp_wake);
    pthread_mutex_unlock(&ember_tp_mu);
    for (i = 1; i <= ember_tp_started; ++i) pthread_join(ember_tp_tid[i], 0);
    ember_tp_started = 0;
    __atomic_store_n(&ember_tp_quit, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ember_tp_owner);
}
/*@end*/
