/* ember kernel library: the thread pool of a multi-threaded bundle (--threads N; host and Linux only).
 * The one part of a bundle that is not freestanding: it needs POSIX threads (link with -pthread). */

/*@kernel ember_tp requires ember_prelude*/
/* A pool of EMBER_THREADS - 1 workers beside the calling thread, in static storage (nothing is
 * allocated by the bundle; the workers start on the first call that wants them, or again after
 * NAME_shutdown). A divided node's parts are fixed at compile time (ember/ops/parallel.py), so which
 * thread computes a part never changes a result. The caller and the workers take parts from a shared
 * ticket until none is left, so a worker the OS has not scheduled yet delays nobody: the caller
 * computes its parts instead, and waits only for parts that were taken.
 *
 * The ticket is one 64-bit word, the job number (32 bits), its part count (16) and the next part to
 * take (16), changed by compare-and-swap only: a worker that wakes late for a job sees the job number
 * move on and takes nothing of the old one. The job's function and regions are written before its
 * ticket is published and rewritten only once all its parts are done.
 *
 * Re-entrancy: the workers serve one call at a time, the one that holds `ember_tp_owner`. A call that
 * finds it taken (another thread is running this bundle on its own buffers) computes every part
 * itself, in order: the same partition, so the same results, on one thread. Each part has its own
 * scratch, so nothing else is shared.
 *
 * Waiting: a worker spins briefly for the next job (nodes follow each other within microseconds),
 * then sleeps on a condition variable; the caller does the same for the last parts to finish. */
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
#define EMBER_TP_SPIN 4000
#define EMBER_TP_JOB(t) ((uint32_t)((t) >> 32))
#define EMBER_TP_PARTS(t) ((int)(((t) >> 16) & 0xffffu))
#define EMBER_TP_NEXT(t) ((int)((t) & 0xffffu))

typedef void (*ember_tp_task)(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations, int part);

static pthread_mutex_t ember_tp_owner = PTHREAD_MUTEX_INITIALIZER; /* held by the call being served */
static pthread_mutex_t ember_tp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ember_tp_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t ember_tp_done = PTHREAD_COND_INITIALIZER;
static pthread_t ember_tp_tid[EMBER_THREADS];
static int ember_tp_started;                /* workers running (changed by the owner only) */
static int ember_tp_want = EMBER_THREADS;   /* threads a call uses (atomic) */
static uint64_t ember_tp_ticket;            /* job, parts, next part (atomic) */
static int ember_tp_finished;               /* parts of the current job done (atomic) */
static int ember_tp_quit;                   /* (atomic) */
static ember_tp_task ember_tp_fn;
static uint8_t *ember_tp_c, *ember_tp_m, *ember_tp_a;

/* Takes and computes parts of the current job while there are any; returns the job's number. */
static uint32_t ember_tp_work(void) {
    uint64_t t = __atomic_load_n(&ember_tp_ticket, __ATOMIC_ACQUIRE);
    while (EMBER_TP_NEXT(t) < EMBER_TP_PARTS(t)) {
        if (__atomic_compare_exchange_n(&ember_tp_ticket, &t, t + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            ember_tp_fn(ember_tp_c, ember_tp_m, ember_tp_a, EMBER_TP_NEXT(t));
            if (__atomic_add_fetch(&ember_tp_finished, 1, __ATOMIC_ACQ_REL) == EMBER_TP_PARTS(t)) {
                pthread_mutex_lock(&ember_tp_mu);
                pthread_cond_signal(&ember_tp_done);
                pthread_mutex_unlock(&ember_tp_mu);
            }
            t = __atomic_load_n(&ember_tp_ticket, __ATOMIC_ACQUIRE);
        }
    }
    return EMBER_TP_JOB(t);
}

static void *ember_tp_worker(void *arg) {
    const int id = (int)(intptr_t)arg;
    for (;;) {
        uint32_t seen;
        int spin;
        if (id < __atomic_load_n(&ember_tp_want, __ATOMIC_RELAXED))
            seen = ember_tp_work();
        else
            seen = EMBER_TP_JOB(__atomic_load_n(&ember_tp_ticket, __ATOMIC_ACQUIRE)); /* not wanted now */
        for (spin = 0; spin < EMBER_TP_SPIN &&
                       EMBER_TP_JOB(__atomic_load_n(&ember_tp_ticket, __ATOMIC_ACQUIRE)) == seen; ++spin)
            EMBER_TP_PAUSE();
        pthread_mutex_lock(&ember_tp_mu);
        while (EMBER_TP_JOB(__atomic_load_n(&ember_tp_ticket, __ATOMIC_ACQUIRE)) == seen &&
               !__atomic_load_n(&ember_tp_quit, __ATOMIC_ACQUIRE))
            pthread_cond_wait(&ember_tp_wake, &ember_tp_mu);
        pthread_mutex_unlock(&ember_tp_mu);
        if (__atomic_load_n(&ember_tp_quit, __ATOMIC_ACQUIRE)) return 0;
    }
}

/* At the start of a call: the number of threads it runs its parts on when it owns the pool, 0 when
 * it runs alone (one thread wanted, or another call owns the pool). */
static int ember_tp_enter(void) {
    const int want = __atomic_load_n(&ember_tp_want, __ATOMIC_RELAXED);
    if (want <= 1 || pthread_mutex_trylock(&ember_tp_owner) != 0) return 0;
    while (ember_tp_started < want - 1) {
        const int id = ember_tp_started + 1;
        if (pthread_create(&ember_tp_tid[id], 0, ember_tp_worker, (void *)(intptr_t)id) != 0) break;
        ember_tp_started = id;
    }
    return want < ember_tp_started + 1 ? want : ember_tp_started + 1;
}

static void ember_tp_leave(int threads) {
    if (threads > 0) pthread_mutex_unlock(&ember_tp_owner);
}

static void ember_tp_run(int threads, ember_tp_task fn, int parts, uint8_t *c, uint8_t *m, uint8_t *a) {
    uint64_t t;
    int p, spin;
    if (threads <= 1) {
        for (p = 0; p < parts; ++p) fn(c, m, a, p);
        return;
    }
    ember_tp_fn = fn;
    ember_tp_c = c;
    ember_tp_m = m;
    ember_tp_a = a;
    __atomic_store_n(&ember_tp_finished, 0, __ATOMIC_RELAXED);
    t = __atomic_load_n(&ember_tp_ticket, __ATOMIC_RELAXED);
    t = ((uint64_t)(EMBER_TP_JOB(t) + 1u) << 32) | ((uint64_t)parts << 16);
    pthread_mutex_lock(&ember_tp_mu);
    __atomic_store_n(&ember_tp_ticket, t, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&ember_tp_wake);
    pthread_mutex_unlock(&ember_tp_mu);
    ember_tp_work();
    for (spin = 0; spin < EMBER_TP_SPIN && __atomic_load_n(&ember_tp_finished, __ATOMIC_ACQUIRE) != parts; ++spin)
        EMBER_TP_PAUSE();
    if (__atomic_load_n(&ember_tp_finished, __ATOMIC_ACQUIRE) != parts) {
        pthread_mutex_lock(&ember_tp_mu);
        while (__atomic_load_n(&ember_tp_finished, __ATOMIC_ACQUIRE) != parts)
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
