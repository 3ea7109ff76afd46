#include "rules/engine/memory_evidence.h"

#include "analysis/units.h"

bool memory_evidence_add(const ProfileView *view, int file, Finding *f, uint32_t first, uint32_t last) {
    if (!view || file < 0) return true;
    const Profile *p = profile_view_profile(view);
    uint64_t peak = 0, allocated = 0, allocations = 0, growth = 0, peak_total = 0;
    for (size_t i = 0; i < p->memory_line_count; i++) {
        const ProfMemLine *l = &p->memory_lines[i];
        if (l->site < 0 || (size_t)l->site >= p->site_count) continue;
        const ProfSite *s = &p->sites[l->site];
        if (s->file != file || s->line < first || s->line > last) continue;
        switch (l->kind) {
        case PROF_MEM_LINE_PEAK:
            peak = prof_add_u64(peak, l->bytes);
            peak_total = prof_add_u64(peak_total, p->memories[l->memory].peak_allocated);
            break;
        case PROF_MEM_LINE_ALLOCS:
            allocated = prof_add_u64(allocated, l->bytes);
            allocations = prof_add_u64(allocations, l->count);
            break;
        case PROF_MEM_LINE_GROWTH: growth = prof_add_u64(growth, l->bytes); break;
        default: break;
        }
    }
    bool ok = true;
    if (peak)
        ok = finding_measured(f, QV(q_bytes(peak), q_share(peak, peak_total)),
                              "device memory allocated on these lines and live at the memory peak: {} ({} of it)");
    if (ok && growth)
        ok = finding_measured(f, QV(q_bytes(growth)), "live memory allocated on these lines grew by {} per optimizer step");
    if (ok && allocations)
        ok = finding_measured(f, QV(q_count(allocations), q_bytes(allocated)),
                              "{} device allocations on these lines in the recorded window, {} in all");
    return ok;
}
