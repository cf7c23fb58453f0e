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

   Counting: one IMark is one guest instruction; the count of the instructions seen so far is added to a 64-bit
   counter before every side exit and at the end of the block (an exit taken skips the rest), inline (no helper
   call). At exit the total is printed as cachegrind prints it: "I   refs:      1,234".
   Built by arbiter.timing.instructions.build_counter_tool against the libcoregrind/libvex of the installed
   valgrind (Debian's valgrind package ships them for external tools). amd64 only (the request block is at %rax). */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_vki.h"
#include "pub_tool_machine.h"
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

static IRSB* ac_instrument(VgCallbackClosure* closure, IRSB* in, const VexGuestLayout* layout,
                           const VexGuestExtents* vge, const VexArchInfo* archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   IRSB* out = deepCopyIRSBExceptStmts(in);
   ULong pending = 0;
   Int i;
   for (i = 0; i < in->stmts_used; i++) {
      IRStmt* st = in->stmts[i];
      if (st == NULL || st->tag == Ist_NoOp)
         continue;
      if (st->tag == Ist_IMark)
         pending++;
      if (st->tag == Ist_Exit) {
         add_count(out, pending);
         pending = 0;
      }
      addStmtToIRSB(out, st);
   }
   add_count(out, pending);
   if (in->jumpkind == Ijk_ClientReq) {
      IRTemp a = newIRTemp(out->tyenv, Ity_I64);
      addStmtToIRSB(out, IRStmt_WrTmp(a, IRExpr_Get(offsetof(VexGuestAMD64State, guest_RAX), Ity_I64)));
      IRDirty* d = unsafeIRDirty_0_N(1, "ac_client_request", VG_(fnptr_to_fnentry)(&ac_client_request),
                                     mkIRExprVec_1(IRExpr_RdTmp(a)));
      addStmtToIRSB(out, IRStmt_Dirty(d));
   }
   return out;
}

static void ac_post_clo_init(void)
{
}

static void ac_fini(Int exitcode)
{
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
}

VG_DETERMINE_INTERFACE_VERSION(ac_pre_clo_init)
