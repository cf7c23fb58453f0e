/* arbiter-count: a valgrind tool that counts the guest instructions a program executes (cachegrind's "I refs",
   the same figure) and refuses every valgrind client request the program makes.

   Why: a client request (the "special instruction preamble" rolq $3,$13,$61,$51 %rdi then xchgq %rbx,%rbx)
   asks the valgrind core to do something for the program; VG_USERREQ__CLIENT_CALL0..3 make it call a function
   of the program natively, so that function's instructions are never counted. The core honours requests before
   any tool sees them, but every request ends a superblock with jump kind Ijk_ClientReq, which this tool sees when
   it instruments the block: it adds a call that reads the request number (at guest %rax) at run time and, unless
   the request is one of valgrind's own preload plumbing (FREERES_DONE, ADD_IFUNC_TARGET: they run no program code),
   prints "arbiter-count: refused client request 0x..." to the log and ends the process before the core acts on
   it. Where the request's bytes come from (the binary, a library, code written at run time) does not matter.

   Code that changes under the meter: valgrind runs translations of the program's code, so a program that changes
   its code could run one thing natively and another (a stale translation) under the meter. Run with
   --smc-check=all, every translation checks its code at entry (a change made by a system call, such as a write to
   /proc/self/mem, or by an earlier block is seen); a store into the code of the block that is running is not.
   So the tool ends the run, with "arbiter-count: refused code change: ..." in the log, when the program asks for
   memory that is writable and executable at once (mmap, mprotect, pkey_mprotect with PROT_WRITE|PROT_EXEC;
   shmat with SHM_EXEC; personality(READ_IMPLIES_EXEC)), asks for any new executable memory once its own code has
   started (a second, executable view of memory it can write), or runs code from a writable mapping (an
   executable stack, a writable and executable segment of the binary).

   The meter's own memory: valgrind and the program share one address space, so a store of the program, or a
   system call writing into one of its buffers, could land in valgrind's or this tool's memory (the counters, the
   simulated caches, the translations) and change the figures. Before every store (Ist_Store, StoreG, CAS, SC, a
   dirty helper's write) the tool looks up the segment it lands in; valgrind's own (SkAnonV, SkFileV) ends the run
   with "arbiter-count: refused write to the meter's memory: ..." in the log, as does a system call about to write
   into such memory (track_pre_mem_write), a system call any argument of which points into it (the kernel writes
   through pointers the wrappers do not all announce), asynchronous I/O (the kernel writes into request blocks
   the program only points to), a change of namespaces or mounts, and a writable open of a process's /proc mem
   file. The last few client segments a store landed in are remembered (forgotten at every system call, the only
   way mappings change), so a store costs a few compares.

   Counting: one IMark is one guest instruction; the count of the instructions seen so far is added to a 64-bit
   counter before every side exit and at the end of the block (an exit taken skips the rest), inline (no helper
   call). At exit the total is printed as cachegrind prints it: "I   refs:      1,234".
   Simulation (--sim=yes, for the "cycles" measure): every instruction fetch goes through a simulated I1 cache,
   every data access (loads, stores, CAS, LL/SC, dirty helpers' memory effects) through D1, their misses through a
   unified LL (set-associative, LRU, write-allocate, like cachegrind's simulator; geometry from --I1/--D1/--LL
   size,assoc,line); conditional branches go through a gshare predictor (16384 2-bit counters, 14 bits of global
   history) and indirect jumps/calls/returns through a 512-entry target buffer; the distinct 4 KiB pages touched
   (Pg) and the system calls made (Sys) are counted too. At exit one more line precedes the count:
   "arbiter-count sim: I1m=.. D1m=.. LLim=.. LLdm=.. Bc=.. Bcm=.. Bi=.. Bim=.. Pg=.. Sys=..". The count itself is
   unchanged by simulation. No prefetcher, no timing: see docs/measurement.md, "Cycles".
   Built by arbiter.timing.instructions.build_counter_tool against the libcoregrind/libvex of the installed
   valgrind (Debian's valgrind package ships them for external tools). amd64 only (the request block is at %rax). */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_vki.h"
#include "pub_tool_machine.h"
#include "pub_tool_options.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_vkiscnums.h"
#include "libvex_guest_amd64.h"
#include <stddef.h>

#if !defined(VGA_amd64)
#error "arbiter-count supports amd64 only"
#endif

/* valgrind's own preload (vgpreload_core) makes these; they run no program code natively */
#define REQ_FREERES_DONE      0x3029
#define REQ_ADD_IFUNC_TARGET  0x3104
/* exit status of a run whose client request was refused (the log line is what callers trust) */
#define REFUSED_EXIT 97

static ULong n_instrs = 0;

static VG_REGPARM(1) void ac_client_request(HWord args)
{
   UWord req = 0;
   Bool readable = VG_(am_is_valid_for_client)((Addr)args, sizeof(UWord), VKI_PROT_READ);
   if (readable)
      req = *(UWord*)args;
   if (readable && (req == REQ_FREERES_DONE || req == REQ_ADD_IFUNC_TARGET))
      return;
   VG_(umsg)("arbiter-count: refused client request 0x%lx%s\n", req, readable ? "" : " (unreadable)");
   VG_(exit)(REFUSED_EXIT);
}

/* ---- code that changes under the meter ---- */
#define PROT_W_X (VKI_PROT_WRITE | VKI_PROT_EXEC)
#define SHM_EXEC_FLAG 0100000          /* shmat's SHM_EXEC */
#define READ_IMPLIES_EXEC_FLAG 0x0400000 /* personality's READ_IMPLIES_EXEC */
/* set once a block of the program's own binary has been translated: from then on ld.so has mapped every library */
static Bool program_started = False;

static void refuse_code_change(const HChar* what)
{
   VG_(umsg)("arbiter-count: refused code change: %s\n", what);
   VG_(exit)(REFUSED_EXIT);
}

/* before the kernel acts on a system call of the program (called by ac_pre_syscall) */
static void refuse_code_syscall(UInt sysno, UWord* args)
{
   UWord prot;
   if (sysno == __NR_mmap || sysno == __NR_mprotect || sysno == __NR_pkey_mprotect) {
      prot = args[2];
      if ((prot & PROT_W_X) == PROT_W_X)
         refuse_code_change("the program asked for memory that is writable and executable");
      if ((prot & VKI_PROT_EXEC) && program_started)
         refuse_code_change("the program asked for executable memory after it started");
   } else if (sysno == __NR_shmat) {
      if (args[2] & SHM_EXEC_FLAG)
         refuse_code_change("the program attached shared memory as executable");
   } else if (sysno == __NR_personality) {
      if (args[0] != 0xffffffffUL && (args[0] & READ_IMPLIES_EXEC_FLAG))
         refuse_code_change("the program asked that readable memory be executable (READ_IMPLIES_EXEC)");
   } else if (sysno == __NR_remap_file_pages && program_started) {
      refuse_code_change("the program remapped file pages after it started");
   }
}

/* at translation time: refuse code in writable memory; note when the program's own binary starts running */
static void check_code_extents(const VexGuestExtents* vge)
{
   UInt i;
   for (i = 0; i < vge->n_used; i++) {
      NSegment const* seg = VG_(am_find_nsegment)((Addr)vge->base[i]);
      if (seg != NULL && seg->hasW && (seg->kind == SkFileC || seg->kind == SkAnonC || seg->kind == SkShmC))
         refuse_code_change("the program runs code from writable memory");
   }
   if (!program_started && vge->n_used > 0) {
      NSegment const* seg = VG_(am_find_nsegment)((Addr)vge->base[0]);
      const HChar* name = seg != NULL && seg->kind == SkFileC ? VG_(am_get_filename)(seg) : NULL;
      if (name != NULL && VG_(args_the_exename) != NULL && VG_(strcmp)(name, VG_(args_the_exename)) == 0)
         program_started = True;
   }
}

/* ---- the meter's own memory ---- */
static void refuse_meter_write(const HChar* what, Addr a)
{
   VG_(umsg)("arbiter-count: refused write to the meter's memory: %s at 0x%lx\n", what, a);
   VG_(exit)(REFUSED_EXIT);
}

#define KNOWN_SEGS 4
/* client segments stores landed in lately: [known_lo[i], known_hi[i]] (lo > hi: none) */
static Addr known_lo[KNOWN_SEGS] = {1, 1, 1, 1}, known_hi[KNOWN_SEGS] = {0, 0, 0, 0};
static UInt known_next = 0;

static void forget_segments(void)
{
   UInt i;
   for (i = 0; i < KNOWN_SEGS; i++) {
      known_lo[i] = 1;
      known_hi[i] = 0;
   }
}

/* bytes [a, a + size) about to be written by the program or for it: refused where valgrind owns the memory */
static void check_write(Addr a, SizeT size, const HChar* what)
{
   Addr last = a + (size ? size : 1) - 1, p = a;
   UInt i;
   if (last < a)
      last = ~(Addr)0;
   for (i = 0; i < KNOWN_SEGS; i++)
      if (a >= known_lo[i] && last <= known_hi[i])
         return;
   for (;;) {
      NSegment const* seg = VG_(am_find_nsegment)(p);
      if (seg == NULL)
         return;  /* outside the address space: the access faults */
      if (seg->kind == SkAnonV || seg->kind == SkFileV)
         refuse_meter_write(what, p);
      if (seg->kind == SkAnonC || seg->kind == SkFileC || seg->kind == SkShmC) {
         known_lo[known_next] = seg->start;
         known_hi[known_next] = seg->end;
         known_next = (known_next + 1) % KNOWN_SEGS;
      }
      if (seg->end >= last || seg->end == ~(Addr)0)
         return;
      p = seg->end + 1;
   }
}

/* a system call about to write into [a, a + size) (what valgrind's syscall wrappers announce as output) */
static void ac_pre_mem_write(CorePart part, ThreadId tid, const HChar* s, Addr a, SizeT size)
{
   if (size > 0)
      check_write(a, size, "a system call's output");
}

/* How many arguments the common system calls take, plus one (0: not listed, all six are checked): a register a
   call does not read may hold anything the program left there. */
static const UChar ARITY[] = {
   [__NR_read] = 4, [__NR_write] = 4, [__NR_open] = 4, [__NR_close] = 2, [__NR_stat] = 3, [__NR_fstat] = 3,
   [__NR_lstat] = 3, [__NR_poll] = 4, [__NR_lseek] = 4, [__NR_mmap] = 7, [__NR_mprotect] = 4, [__NR_munmap] = 3,
   [__NR_brk] = 2, [__NR_rt_sigaction] = 5, [__NR_rt_sigprocmask] = 5, [__NR_ioctl] = 4, [__NR_pread64] = 5,
   [__NR_pwrite64] = 5, [__NR_readv] = 4, [__NR_writev] = 4, [__NR_access] = 3, [__NR_pipe] = 2,
   [__NR_sched_yield] = 1, [__NR_mremap] = 6, [__NR_madvise] = 4, [__NR_dup] = 2, [__NR_dup2] = 3,
   [__NR_nanosleep] = 3, [__NR_getpid] = 1, [__NR_exit] = 2, [__NR_uname] = 2, [__NR_fcntl] = 4,
   [__NR_getcwd] = 3, [__NR_readlink] = 4, [__NR_gettimeofday] = 3, [__NR_getrlimit] = 3, [__NR_getrusage] = 3,
   [__NR_getuid] = 1, [__NR_getgid] = 1, [__NR_geteuid] = 1, [__NR_getegid] = 1, [__NR_getppid] = 1,
   [__NR_sigaltstack] = 3, [__NR_arch_prctl] = 3, [__NR_setrlimit] = 3, [__NR_gettid] = 1, [__NR_time] = 2,
   [__NR_futex] = 7, [__NR_sched_getaffinity] = 4, [__NR_set_tid_address] = 2, [__NR_clock_gettime] = 3,
   [__NR_clock_getres] = 3, [__NR_clock_nanosleep] = 5, [__NR_exit_group] = 2, [__NR_tgkill] = 4,
   [__NR_openat] = 5, [__NR_newfstatat] = 5, [__NR_set_robust_list] = 3, [__NR_pipe2] = 3, [__NR_dup3] = 4,
   [__NR_prlimit64] = 5, [__NR_getrandom] = 4, [__NR_statx] = 6,
};

/* Before any system call: the kernel writes through pointers valgrind's wrappers do not all announce as output
   (prctl(PR_GET_TID_ADDRESS), futex(FUTEX_WAKE_OP)'s second word, capget's header...), so an argument that points
   into valgrind's memory is refused, whatever the call; so are asynchronous I/O (the kernel writes into request
   blocks the program only points to) and changes of namespaces and mounts (a bind mount would show a process's
   memory file under another path). A program measured here has no reason to do any of these. */
static void refuse_meter_syscall(UInt sysno, UWord* args, UInt nargs)
{
   UInt i, n = sysno < sizeof(ARITY) && ARITY[sysno] ? ARITY[sysno] - 1 : 6;
   for (i = 0; i < n && i < nargs; i++) {
      NSegment const* seg = VG_(am_find_nsegment)((Addr)args[i]);
      if (seg != NULL && (seg->kind == SkAnonV || seg->kind == SkFileV))
         refuse_meter_write("a system call's argument that points into it", (Addr)args[i]);
   }
   if (sysno == __NR_unshare || sysno == __NR_setns || sysno == __NR_mount || sysno == __NR_umount2
       || sysno == __NR_pivot_root)
      refuse_meter_write("a change of namespaces or mounts", 0);
   if (sysno == __NR_io_setup || sysno == __NR_io_submit)  /* the kernel writes into the request blocks it is given */
      refuse_meter_write("asynchronous I/O (io_setup, io_submit)", 0);
}

/* after a successful open: a process's /proc/<pid>/mem (or a thread's) opened for writing is refused */
static void check_opened(Int fd, UWord flags)
{
   HChar link[64], target[128];
   SSizeT n;
   if ((flags & VKI_O_ACCMODE) == VKI_O_RDONLY)
      return;
   VG_(sprintf)(link, "/proc/self/fd/%d", fd);
   n = VG_(readlink)(link, target, sizeof(target) - 1);
   if (n <= 0)
      return;
   target[n] = '\0';
   if (VG_(strncmp)(target, "/proc/", 6) == 0 && n >= 4 && VG_(strcmp)(target + n - 4, "/mem") == 0)
      refuse_meter_write("a /proc mem file opened for writing", 0);
}

/* ---- cache and branch simulation (--sim=yes) ---- */
typedef struct { const HChar* name; Long size, assoc, line; UWord sets_mask; Int line_bits; UWord* tags; } Cache;
static Bool sim = False;
static Cache I1 = {"I1", 32768, 8, 64}, D1 = {"D1", 32768, 8, 64}, LL = {"LL", 8388608, 16, 64};
static ULong I1m = 0, D1m = 0, LLim = 0, LLdm = 0, Bc = 0, Bcm = 0, Bi = 0, Bim = 0;
static ULong Pg = 0, Sys = 0;
#define COND_BITS 14
#define COND_SIZE (1u << COND_BITS)
#define IND_SIZE 512
static UChar cond_table[COND_SIZE];
static UWord cond_history = 0;
static Addr ind_table[IND_SIZE];

static Bool parse_cache(const HChar* arg, const HChar* val, Cache* c)
{
   HChar* end;
   c->size = VG_(strtoll10)(val, &end);
   if (*end != ',') return False;
   c->assoc = VG_(strtoll10)(end + 1, &end);
   if (*end != ',') return False;
   c->line = VG_(strtoll10)(end + 1, &end);
   if (*end != '\0' || c->size <= 0 || c->assoc <= 0 || c->line < 16 || (c->line & (c->line - 1)) != 0)
      return False;
   Long sets = c->size / (c->assoc * c->line);
   return sets > 0 && (sets & (sets - 1)) == 0 && sets * c->assoc * c->line == c->size;
}

static void init_cache(Cache* c)
{
   Long sets = c->size / (c->assoc * c->line);
   c->sets_mask = (UWord)(sets - 1);
   c->line_bits = 0;
   while ((1L << c->line_bits) < c->line) c->line_bits++;
   c->tags = VG_(calloc)("arbiter-count.cache", (SizeT)(sets * c->assoc), sizeof(UWord));
   /* tag 0 means empty: blocks are stored + 1 */
}

/* one block reference; True on a miss (LRU: the set's ways are kept most recent first) */
static Bool ref_block(Cache* c, UWord block)
{
   UWord* set = c->tags + (block & c->sets_mask) * (UWord)c->assoc;
   UWord tag = block + 1;
   Long i, n = c->assoc;
   if (set[0] == tag) return False;
   for (i = 1; i < n; i++) {
      if (set[i] == tag) {
         for (; i > 0; i--) set[i] = set[i - 1];
         set[0] = tag;
         return False;
      }
   }
   for (i = n - 1; i > 0; i--) set[i] = set[i - 1];
   set[0] = tag;
   return True;
}

/* an access of size bytes at a: one miss at most, however many lines it touches */
static Bool ref(Cache* c, Addr a, UWord size)
{
   UWord first = a >> c->line_bits, last = (a + (size ? size : 1) - 1) >> c->line_bits, b;
   Bool miss = False;
   for (b = first; b <= last; b++)
      miss |= ref_block(c, b);
   return miss;
}

/* Pages the program touched (4 KiB; their first touches are the page faults of a fresh process). A first touch of
   a page is always a last-level miss (the caches start empty), so only LL misses are looked up: one hash set of
   page numbers, open addressing, grown at half full. */
#define PAGE_BITS 12
static UWord* touched = NULL;
static UWord touched_cap = 0;

/* the slot of page key k (page + 1; 0 marks an empty slot) in a table of cap slots */
static UWord page_slot(UWord* table, UWord cap, UWord k)
{
   UWord i = (UWord)((k * 0x9E3779B97F4A7C15ULL) >> 40) & (cap - 1);
   while (table[i] != 0 && table[i] != k)
      i = (i + 1) & (cap - 1);
   return i;
}

static void touch_page(UWord page)
{
   UWord k = page + 1, i, j;
   if (2 * (Pg + 1) > touched_cap) {
      UWord old_cap = touched_cap;
      UWord* old = touched;
      touched_cap = old_cap ? 2 * old_cap : 4096;
      touched = VG_(calloc)("arbiter-count.pages", touched_cap, sizeof(UWord));
      for (j = 0; j < old_cap; j++)
         if (old[j] != 0)
            touched[page_slot(touched, touched_cap, old[j])] = old[j];
      if (old != NULL)
         VG_(free)(old);
   }
   i = page_slot(touched, touched_cap, k);
   if (touched[i] == 0) {
      touched[i] = k;
      Pg++;
   }
}

static void ll_miss_pages(Addr a, UWord size)
{
   UWord first = a >> PAGE_BITS, last = (a + (size ? size : 1) - 1) >> PAGE_BITS, p;
   for (p = first; p <= last; p++) touch_page(p);
}

static VG_REGPARM(2) void ac_ifetch(Addr a, UWord size)
{
   if (ref(&I1, a, size)) { I1m++; if (ref(&LL, a, size)) { LLim++; ll_miss_pages(a, size); } }
}

static VG_REGPARM(2) void ac_data(Addr a, UWord size)
{
   if (ref(&D1, a, size)) { D1m++; if (ref(&LL, a, size)) { LLdm++; ll_miss_pages(a, size); } }
}

static VG_REGPARM(2) void ac_store(Addr a, UWord size)
{
   check_write(a, size, "a store");
}

static VG_REGPARM(2) void ac_data_store(Addr a, UWord size)
{
   check_write(a, size, "a store");
   ac_data(a, size);
}

/* System calls the program makes (ld.so's included). */
static void ac_pre_syscall(ThreadId tid, UInt no, UWord* args, UInt nargs)
{
   refuse_code_syscall(no, args);
   refuse_meter_syscall(no, args, nargs);
   forget_segments();
   if (sim) Sys++;
}

static void ac_post_syscall(ThreadId tid, UInt no, UWord* args, UInt nargs, SysRes res)
{
   forget_segments();  /* (mappings change only by system calls) */
   if (!sr_isError(res) && (no == __NR_open || no == __NR_openat || no == __NR_creat))
      check_opened((Int)sr_Res(res), no == __NR_open ? args[1] : no == __NR_openat ? args[2] : VKI_O_WRONLY);
}

static VG_REGPARM(2) void ac_cond(Addr ia, UWord taken)
{
   UWord i = ((ia >> 2) ^ cond_history) & (COND_SIZE - 1);
   UChar ctr = cond_table[i];
   Bc++;
   if ((ctr >= 2) != (taken != 0)) Bcm++;
   cond_table[i] = taken ? (ctr < 3 ? ctr + 1 : 3) : (ctr > 0 ? ctr - 1 : 0);
   cond_history = ((cond_history << 1) | (taken != 0)) & (COND_SIZE - 1);
}

static VG_REGPARM(2) void ac_indirect(Addr ia, Addr dst)
{
   UWord i = (ia >> 2) & (IND_SIZE - 1);
   Bi++;
   if (ind_table[i] != dst) { Bim++; ind_table[i] = dst; }
}

static void add_call(IRSB* sb, const HChar* name, void* fn, IRExpr* a1, IRExpr* a2, IRExpr* guard)
{
   IRDirty* d = unsafeIRDirty_0_N(2, name, VG_(fnptr_to_fnentry)(fn), mkIRExprVec_2(a1, a2));
   if (guard != NULL)
      d->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(d));
}

static IRExpr* widen(IRSB* sb, IRExpr* e)
{
   IRType ty = typeOfIRExpr(sb->tyenv, e);
   IRTemp t;
   if (ty == Ity_I64) return e;
   t = newIRTemp(sb->tyenv, Ity_I64);
   addStmtToIRSB(sb, IRStmt_WrTmp(t, IRExpr_Unop(ty == Ity_I1 ? Iop_1Uto64 : ty == Ity_I32 ? Iop_32Uto64
                                                 : ty == Ity_I16 ? Iop_16Uto64 : Iop_8Uto64, e)));
   return IRExpr_RdTmp(t);
}

#define DATA(sb, addr, size, guard) \
   add_call(sb, "ac_data", &ac_data, addr, mkIRExpr_HWord((HWord)(size)), guard)

/* The check of a statement that writes memory (a store, a guarded store, CAS, SC, a dirty helper's write), with
   its simulated access under --sim (ac_data_store): True when st is one. */
static Bool store_before(IRSB* out, IRStmt* st)
{
   IRTypeEnv* env = out->tyenv;
   IRExpr *addr, *guard = NULL;
   Int size;
   switch (st->tag) {
   case Ist_Store:
      addr = st->Ist.Store.addr;
      size = sizeofIRType(typeOfIRExpr(env, st->Ist.Store.data));
      break;
   case Ist_StoreG:
      addr = st->Ist.StoreG.details->addr;
      size = sizeofIRType(typeOfIRExpr(env, st->Ist.StoreG.details->data));
      guard = st->Ist.StoreG.details->guard;
      break;
   case Ist_CAS:
      addr = st->Ist.CAS.details->addr;
      size = sizeofIRType(typeOfIRExpr(env, st->Ist.CAS.details->dataLo))
             * (st->Ist.CAS.details->dataHi != NULL ? 2 : 1);
      break;
   case Ist_LLSC:
      if (st->Ist.LLSC.storedata == NULL)
         return False;  /* a load-linked */
      addr = st->Ist.LLSC.addr;
      size = sizeofIRType(typeOfIRExpr(env, st->Ist.LLSC.storedata));
      break;
   case Ist_Dirty:
      if ((st->Ist.Dirty.details->mFx != Ifx_Write && st->Ist.Dirty.details->mFx != Ifx_Modify)
          || st->Ist.Dirty.details->mSize <= 0)
         return False;
      addr = st->Ist.Dirty.details->mAddr;
      size = st->Ist.Dirty.details->mSize;
      guard = st->Ist.Dirty.details->guard;
      break;
   default:
      return False;
   }
   if (sim)
      add_call(out, "ac_data_store", &ac_data_store, addr, mkIRExpr_HWord((HWord)size), guard);
   else
      add_call(out, "ac_store", &ac_store, addr, mkIRExpr_HWord((HWord)size), guard);
   return True;
}

/* the simulation calls that go before statement st (ia: address of the current instruction); statements that
   write memory are simulated by store_before */
static void sim_before(IRSB* out, IRStmt* st, Addr ia)
{
   IRTypeEnv* env = out->tyenv;
   switch (st->tag) {
   case Ist_IMark:
      break;
   case Ist_WrTmp:
      if (st->Ist.WrTmp.data->tag == Iex_Load)
         DATA(out, st->Ist.WrTmp.data->Iex.Load.addr, sizeofIRType(st->Ist.WrTmp.data->Iex.Load.ty), NULL);
      break;
   case Ist_LoadG: {
      IRLoadG* lg = st->Ist.LoadG.details;
      IRType tyW = Ity_INVALID, tyL = Ity_INVALID;
      typeOfIRLoadGOp(lg->cvt, &tyW, &tyL);
      DATA(out, lg->addr, sizeofIRType(tyL), lg->guard);
      break;
   }
   case Ist_LLSC:  /* a load-linked (a store-conditional is store_before's) */
      DATA(out, st->Ist.LLSC.addr, sizeofIRType(typeOfIRTemp(env, st->Ist.LLSC.result)), NULL);
      break;
   case Ist_Dirty: {
      IRDirty* d = st->Ist.Dirty.details;
      if (d->mFx != Ifx_None && d->mSize > 0)
         DATA(out, d->mAddr, d->mSize, d->guard);
      break;
   }
   case Ist_Exit:
      if (st->Ist.Exit.jk == Ijk_Boring)
         add_call(out, "ac_cond", &ac_cond, mkIRExpr_HWord((HWord)ia), widen(out, st->Ist.Exit.guard), NULL);
      break;
   default:
      break;
   }
}

static void add_count(IRSB* sb, ULong n)
{
   if (n == 0)
      return;
   IRTemp t1 = newIRTemp(sb->tyenv, Ity_I64), t2 = newIRTemp(sb->tyenv, Ity_I64);
   IRExpr* addr = mkIRExpr_HWord((HWord)&n_instrs);
   addStmtToIRSB(sb, IRStmt_WrTmp(t1, IRExpr_Load(Iend_LE, Ity_I64, addr)));
   addStmtToIRSB(sb, IRStmt_WrTmp(t2, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(t1),
                                                   IRExpr_Const(IRConst_U64(n)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, addr, IRExpr_RdTmp(t2)));
}

/* The fetch of the instruction at IMark st, unless it lies in the line the block's previous instruction was
   fetched from: a block runs a prefix of its instructions in order, so that line was fetched just before, is the
   most recent of its I1 set (no data access touches I1), and fetching it again would hit and change nothing.
   Returns the instruction's last line. */
static UWord add_ifetch(IRSB* out, IRStmt* st, UWord iline)
{
   Addr a = (Addr)st->Ist.IMark.addr;
   UWord len = st->Ist.IMark.len ? st->Ist.IMark.len : 1;
   UWord first = a >> I1.line_bits, last = (a + len - 1) >> I1.line_bits;
   if (first != iline || last != iline)
      add_call(out, "ac_ifetch", &ac_ifetch, mkIRExpr_HWord((HWord)a), mkIRExpr_HWord((HWord)len), NULL);
   return last;
}

static IRSB* ac_instrument(VgCallbackClosure* closure, IRSB* in, const VexGuestLayout* layout,
                           const VexGuestExtents* vge, const VexArchInfo* archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   IRSB* out;
   ULong pending = 0;
   Addr ia = 0;
   UWord iline = (UWord)-1;  /* the I1 line the previous instruction of this block was fetched from */
   Int i;
   check_code_extents(vge);
   out = deepCopyIRSBExceptStmts(in);
   for (i = 0; i < in->stmts_used; i++) {
      IRStmt* st = in->stmts[i];
      if (st == NULL || st->tag == Ist_NoOp)
         continue;
      if (st->tag == Ist_IMark) {
         pending++;
         ia = (Addr)st->Ist.IMark.addr;
      }
      if (!store_before(out, st) && sim)
         sim_before(out, st, ia);
      if (st->tag == Ist_Exit) {
         add_count(out, pending);
         pending = 0;
      }
      addStmtToIRSB(out, st);
      if (sim && st->tag == Ist_IMark)
         iline = add_ifetch(out, st, iline);
   }
   add_count(out, pending);
   if (sim && in->next->tag != Iex_Const
       && (in->jumpkind == Ijk_Boring || in->jumpkind == Ijk_Call || in->jumpkind == Ijk_Ret))
      add_call(out, "ac_indirect", &ac_indirect, mkIRExpr_HWord((HWord)ia), in->next, NULL);
   if (in->jumpkind == Ijk_ClientReq) {
      IRTemp a = newIRTemp(out->tyenv, Ity_I64);
      addStmtToIRSB(out, IRStmt_WrTmp(a, IRExpr_Get(offsetof(VexGuestAMD64State, guest_RAX), Ity_I64)));
      IRDirty* d = unsafeIRDirty_0_N(1, "ac_client_request", VG_(fnptr_to_fnentry)(&ac_client_request),
                                     mkIRExprVec_1(IRExpr_RdTmp(a)));
      addStmtToIRSB(out, IRStmt_Dirty(d));
   }
   return out;
}

static Bool ac_process_cmd_line_option(const HChar* arg)
{
   const HChar* v = NULL;
   if VG_BOOL_CLO(arg, "--sim", sim) {}
   else if VG_STR_CLO(arg, "--I1", v) { if (!parse_cache(arg, v, &I1)) VG_(fmsg_bad_option)(arg, "bad cache geometry\n"); }
   else if VG_STR_CLO(arg, "--D1", v) { if (!parse_cache(arg, v, &D1)) VG_(fmsg_bad_option)(arg, "bad cache geometry\n"); }
   else if VG_STR_CLO(arg, "--LL", v) { if (!parse_cache(arg, v, &LL)) VG_(fmsg_bad_option)(arg, "bad cache geometry\n"); }
   else return False;
   return True;
}

static void ac_print_usage(void)
{
   VG_(printf)("    --sim=no|yes              simulate caches and branch prediction [no]\n"
               "    --I1=<size>,<assoc>,<line>  --D1=...  --LL=...   cache geometry\n");
}

static void ac_print_debug_usage(void)
{
}

static void ac_post_clo_init(void)
{
   if (sim) {
      init_cache(&I1);
      init_cache(&D1);
      init_cache(&LL);
   }
}

static void ac_fini(Int exitcode)
{
   if (sim)
      VG_(umsg)("arbiter-count sim: I1m=%llu D1m=%llu LLim=%llu LLdm=%llu Bc=%llu Bcm=%llu Bi=%llu Bim=%llu "
                "Pg=%llu Sys=%llu\n", I1m, D1m, LLim, LLdm, Bc, Bcm, Bi, Bim, Pg, Sys);
   VG_(umsg)("I   refs:      %'llu\n", n_instrs);
}

static void ac_pre_clo_init(void)
{
   VG_(details_name)("arbiter-count");
   VG_(details_version)(NULL);
   VG_(details_description)("guest instruction counter that refuses client requests");
   VG_(details_copyright_author)("arbiter");
   VG_(details_bug_reports_to)("arbiter");
   VG_(details_avg_translation_sizeB)(200);
   VG_(basic_tool_funcs)(ac_post_clo_init, ac_instrument, ac_fini);
   VG_(needs_command_line_options)(ac_process_cmd_line_option, ac_print_usage, ac_print_debug_usage);
   VG_(needs_syscall_wrapper)(ac_pre_syscall, ac_post_syscall);
   VG_(track_pre_mem_write)(ac_pre_mem_write);
}

VG_DETERMINE_INTERFACE_VERSION(ac_pre_clo_init)
