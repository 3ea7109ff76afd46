/* The profile folder in the editor: found and read as `advise check` finds
 * and reads it, merged into each analysis, and watched.
 *
 * Watching: a thread of its own polls the folder every 300 ms, never the
 * main loop. The folder's state is a stamp over the name, size and
 * modification time (ns) of each *.json in it (or of the one file when
 * profileDir names a file), so a new, rewritten or deleted profile changes
 * it. A changed stamp reads the folder again, off the lock; the new
 * LspProfiles replaces the old, every open document is analysed again
 * (results are published only when they changed, and stale ones are dropped
 * by version as always), and pull clients get workspace/diagnostic/refresh,
 * code lens clients workspace/codeLens/refresh. Empty files (names that
 * `advise profile` reserves before it renames the finished profile over
 * them) are left out of the stamp; a profile caught half written is
 * skipped as invalid, and its next write changes the stamp again. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rules/engine/engine.h"
#include "server/lsp/jsonrpc.h"
#include "server/lsp/lsp_server.h"
#include "profiler/profile_remap.h"
#include "profiler/profile_store.h"
#include "profiler/sha256.h"
#include "analysis/base/text_format.h"

#define POLL_MS 300

/* ---- references ------------------------------------------------------------ */

static void profiles_free(LspProfiles *p) {
    if (!p) return;
    if (p->set) profile_set_free(p->set);
    config_free(&p->toml);
    free(p->root);
    free(p->dir);
    free(p);
}

LspProfiles *lsp_profiles_ref(LspServer *s) {
    if (s->profiles) s->profiles->refs++;
    return s->profiles;
}

void lsp_profiles_unref(LspProfiles *p) {
    if (p && --p->refs == 0) profiles_free(p);
}

/* ---- where the profiles are ------------------------------------------------- */

/* The project root for a workspace folder (or the working directory): the
 * nearest folder at or above it holding advise.toml, else .git, else the
 * folder itself; *toml: the advise.toml found, or NULL. */
static char *project_root(const char *workspace, char **toml) {
    *toml = NULL;
    char *root = profile_store_root_of(workspace ? workspace : ".");
    if (!root) root = strdup(workspace ? workspace : "/"); /* a folder that is gone: as given */
    if (!root) return NULL;
    size_t n = strlen(root) + 16;
    char *path = malloc(n);
    if (path) snprintf(path, n, "%s/advise.toml", strcmp(root, "/") == 0 ? "" : root);
    struct stat st;
    if (path && stat(path, &st) == 0 && S_ISREG(st.st_mode)) *toml = path;
    else free(path);
    return root;
}

/* Resolves the folder from the settings; set stays NULL (read later). */
static LspProfiles *profiles_resolve(const char *workspace, const char *setting) {
    LspProfiles *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->refs = 1;
    char *toml = NULL;
    p->root = project_root(workspace, &toml);
    config_init(&p->toml);
    if (toml) {
        char *error = NULL;
        if (!config_load_file(&p->toml, toml, &error)) {
            lsp_log(2, "advise: %s", error ? error : "cannot read advise.toml");
            config_free(&p->toml); /* half-read settings are not applied */
            config_init(&p->toml);
        }
        free(error);
    }
    p->cold = p->toml.profile_cold;
    const char *configured = setting && *setting ? setting : p->toml.profile_dir;
    p->dir = p->root ? profile_store_dir(p->root, configured) : NULL;
    free(toml);
    if (!p->root || !p->dir) {
        profiles_free(p);
        return NULL;
    }
    return p;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0x100000001B3ull;
}

static uint64_t stat_stamp(uint64_t h, const struct stat *st) {
    h = mix(h, (uint64_t)st->st_size);
    h = mix(h, (uint64_t)st->st_mtim.tv_sec);
    return mix(h, (uint64_t)st->st_mtim.tv_nsec);
}

/* What the folder holds now, as one number (0: nothing there); *files: how
 * many profile files it holds (may be NULL). */
static uint64_t folder_stamp_counting(const char *dir, size_t *files) {
    if (files) *files = 0;
    struct stat st;
    if (!dir || stat(dir, &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) {
        if (files) *files = 1;
        return stat_stamp(1, &st);
    }
    DIR *d = opendir(dir);
    if (!d) return 0;
    uint64_t sum = 2, count = 0;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
        /* an empty file is a name `advise profile` reserved: the profile is renamed over it when done */
        if (stat(path, &st) != 0 || st.st_size == 0) continue;
        uint64_t h = 14695981039346656037ull;
        for (const char *c = e->d_name; *c; c++) h = mix(h, (unsigned char)*c);
        sum += stat_stamp(h, &st); /* order-independent: readdir's order is not fixed */
        count++;
    }
    closedir(d);
    if (files) *files = (size_t)count;
    return mix(sum, count);
}

static uint64_t folder_stamp(const char *dir) { return folder_stamp_counting(dir, NULL); }

/* Reads the folder into p->set (NULL when nothing usable is there). */
static void profiles_read(LspProfiles *p) {
    p->stamp = folder_stamp_counting(p->dir, &p->files);
    struct stat st;
    if (stat(p->dir, &st) != 0) return; /* no folder (yet): watched all the same */
    char *error = NULL;
    p->set = profile_set_load(p->dir, &error);
    if (!p->set) {
        lsp_log(4, "advise: no profile merged: %s", error ? error : "out of memory");
        free(error);
        return;
    }
    const char *const *notes;
    size_t note_count = profile_set_notes(p->set, &notes);
    for (size_t i = 0; i < note_count; i++) lsp_log(2, "advise: skipped profile %s", notes[i]);
    size_t count = profile_set_count(p->set);
    const Profile *newest = profile_view_profile(profile_set_at(p->set, 0));
    lsp_log(4, "advise: merging %zu profile%s from %s (newest recorded %s)", count, count == 1 ? "" : "s", p->dir,
            newest->created ? newest->created : "?");
}

/* ---- the watcher --------------------------------------------------------------- */

/* Installs fresh as the current profiles (lock held). */
static void install(LspServer *s, LspProfiles *fresh) {
    LspProfiles *old = s->profiles;
    s->profiles = fresh;
    lsp_profiles_unref(old);
}

/* After a reload the watcher saw: analyse the open documents again and ask
 * clients to pull again (lock not held). */
static void refresh_clients(LspServer *s) {
    pthread_mutex_lock(&s->lock);
    for (LspDocument *d = s->documents; d; d = d->next)
        if (!d->closed && d->language != LANGUAGE_UNKNOWN) lsp_schedule(s, d, 0);
    bool pull = s->pull_diagnostics && s->refresh_support, lenses = s->codelens_refresh;
    /* for editor views over the profiles (sidebars, heat maps): the files now merged */
    json_t *paths = json_array();
    for (size_t i = 0; s->profiles && s->profiles->set && i < profile_set_count(s->profiles->set); i++)
        json_array_append_new(paths, json_string(profile_view_path(profile_set_at(s->profiles->set, i))));
    pthread_mutex_unlock(&s->lock);
    if (pull) lsp_send_request(s, "workspace/diagnostic/refresh", NULL, NULL, NULL, NULL);
    if (lenses) lsp_send_request(s, "workspace/codeLens/refresh", NULL, NULL, NULL, NULL);
    jsonrpc_send_notification("advise/profileChanged", json_pack("{s:o}", "profiles", paths));
}

static void wait_ms(LspServer *s, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = ts.tv_nsec + (long long)ms * 1000000;
    ts.tv_sec += ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    pthread_cond_timedwait(&s->profile_wake, &s->lock, &ts);
}

/* Reads again the profiles of other projects whose folders changed (lock
 * held on entry and return; released while reading). True when one changed. */
static bool poll_other_projects(LspServer *s) {
    size_t count = 0;
    for (LspProfiles *p = s->other_profiles; p; p = p->next) count++;
    LspProfiles **list = calloc(count ? count : 1, sizeof *list);
    if (!list) return false;
    count = 0;
    for (LspProfiles *p = s->other_profiles; p; p = p->next) {
        p->refs++;
        list[count++] = p;
    }
    pthread_mutex_unlock(&s->lock);
    bool changed = false;
    for (size_t i = 0; i < count; i++) {
        LspProfiles *old = list[i];
        if (folder_stamp(old->dir) == old->stamp) continue;
        LspProfiles *fresh = profiles_resolve(old->root, NULL);
        if (!fresh) continue;
        profiles_read(fresh);
        pthread_mutex_lock(&s->lock);
        LspProfiles **pp = &s->other_profiles;
        while (*pp && *pp != old) pp = &(*pp)->next;
        if (*pp && !s->stopping) { /* swap it in; the list's reference moves to fresh */
            fresh->next = old->next;
            *pp = fresh;
            old->next = NULL;
            lsp_profiles_unref(old);
            changed = true;
        } else {
            lsp_profiles_unref(fresh);
        }
        pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < count; i++) lsp_profiles_unref(list[i]);
    free(list);
    return changed;
}

static void *watch_main(void *arg) {
    LspServer *s = arg;
    unsigned loaded = 0;
    uint64_t stamp = 0;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        if (loaded != s->profile_generation) { /* the settings changed: analyses wait for this read */
            unsigned generation = s->profile_generation;
            char *workspace = s->root_path ? strdup(s->root_path) : NULL;
            char *setting = s->config.profile_dir ? strdup(s->config.profile_dir) : NULL;
            char *old_dir = s->profiles && s->profiles->dir ? strdup(s->profiles->dir) : NULL;
            ProfileCold old_cold = s->profiles ? s->profiles->cold : PROFILE_COLD_HINT;
            pthread_mutex_unlock(&s->lock);
            LspProfiles *fresh = profiles_resolve(workspace, setting);
            uint64_t now = fresh ? folder_stamp(fresh->dir) : 0;
            /* the same folder in the same state (a settings change that does not touch it): keep what is read */
            bool same = fresh && old_dir && strcmp(old_dir, fresh->dir) == 0 && now == stamp && old_cold == fresh->cold;
            if (fresh && !same) profiles_read(fresh);
            free(workspace);
            free(setting);
            free(old_dir);
            pthread_mutex_lock(&s->lock);
            if (generation == s->profile_generation) {
                if (same) {
                    profiles_free(fresh);
                } else {
                    install(s, fresh);
                    stamp = now;
                }
                loaded = generation;
                s->profiles_ready = true;
                pthread_cond_broadcast(&s->work_ready);
            } else {
                profiles_free(fresh); /* settings changed again meanwhile: read once more */
            }
            continue;
        }
        wait_ms(s, POLL_MS);
        if (s->stopping) continue;
        if (s->other_profiles && poll_other_projects(s)) { /* returns with the lock held */
            pthread_mutex_unlock(&s->lock);
            refresh_clients(s);
            pthread_mutex_lock(&s->lock);
        }
        if (s->stopping || loaded != s->profile_generation || !s->profiles) continue;
        LspProfiles *current = lsp_profiles_ref(s);
        pthread_mutex_unlock(&s->lock);
        uint64_t now = folder_stamp(current->dir);
        LspProfiles *fresh = NULL;
        if (now != stamp) {
            fresh = calloc(1, sizeof *fresh);
            if (fresh) {
                fresh->refs = 1;
                fresh->root = strdup(current->root);
                fresh->dir = strdup(current->dir);
                fresh->cold = current->cold;
                if (fresh->root && fresh->dir) profiles_read(fresh);
            }
        }
        pthread_mutex_lock(&s->lock);
        lsp_profiles_unref(current);
        if (!fresh) continue;
        if (loaded != s->profile_generation || s->stopping || !fresh->root || !fresh->dir) {
            profiles_free(fresh);
            continue;
        }
        install(s, fresh);
        stamp = now;
        pthread_mutex_unlock(&s->lock);
        refresh_clients(s);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

void lsp_profiles_configure(LspServer *s) {
    s->profile_generation++;
    s->profiles_ready = false;
    if (!s->profile_thread_started) {
        pthread_cond_init(&s->profile_wake, NULL);
        if (pthread_create(&s->profile_thread, NULL, watch_main, s) != 0) {
            pthread_cond_destroy(&s->profile_wake);
            lsp_log(1, "advise: cannot start the profile watcher: no profile is merged");
            s->profiles_ready = true;
            return;
        }
        s->profile_thread_started = true;
    }
    pthread_cond_broadcast(&s->profile_wake);
}

void lsp_profiles_stop(LspServer *s) {
    lsp_findings_reap(s, true);
    pthread_mutex_lock(&s->lock);
    bool started = s->profile_thread_started;
    s->stopping = true;
    if (started) pthread_cond_broadcast(&s->profile_wake);
    pthread_mutex_unlock(&s->lock);
    if (started) {
        pthread_join(s->profile_thread, NULL);
        pthread_cond_destroy(&s->profile_wake);
        s->profile_thread_started = false;
    }
    pthread_mutex_lock(&s->lock);
    install(s, NULL);
    while (s->other_profiles) {
        LspProfiles *p = s->other_profiles;
        s->other_profiles = p->next;
        lsp_profiles_unref(p);
    }
    string_list_free(&s->told_unmerged);
    pthread_mutex_unlock(&s->lock);
}

void lsp_profiles_wait_ready(LspServer *s) {
    while (!s->profiles_ready && !s->stopping) pthread_cond_wait(&s->work_ready, &s->lock);
}

/* ---- per document ------------------------------------------------------------------ */

const ProfileView *lsp_profiles_view_for(const LspProfiles *p, const char *path, int *file) {
    *file = -1;
    if (!p || !p->set || !path) return NULL;
    char *abs = realpath(path, NULL);
    const char *full = abs ? abs : path; /* a document not saved yet: its path as the editor names it */
    const char *rel = NULL;
    size_t n = strlen(p->root);
    if (strcmp(p->root, "/") == 0) rel = full + 1;
    else if (strncmp(full, p->root, n) == 0 && full[n] == '/') rel = full + n + 1;
    const ProfileView *v = full[0] == '/' ? profile_set_for_file(p->set, rel, full, file) : NULL;
    free(abs);
    return v;
}

const ProfileView *lsp_profiles_view_through(const LspProfiles *p, const char *path, const Document *text,
                                             const LineMap *map, int *file, ProfileView **owned) {
    *owned = NULL;
    const ProfileView *v = lsp_profiles_view_for(p, path, file);
    if (!v || !map || !line_map_valid(map) || map->count != text->line_count || line_map_is_identity(map)) return v;
    const Profile *profile = profile_view_profile(v);
    const char *recorded = profile->files[*file].sha256;
    if (!recorded || strcmp(recorded, map->baseline_sha256) != 0) return v; /* the map follows another text */
    char now[SHA256_HEX_CHARS + 1];
    sha256_hex_of(text->text, text->length, now);
    if (strcmp(now, recorded) == 0) return v; /* edited back to what was profiled */
    uint32_t *to = line_map_baseline_to_current(map);
    Profile *moved = to ? profile_remap_lines(profile, *file, to, map->baseline_count, now) : NULL;
    free(to);
    ProfileView *mv = moved ? profile_view_new(moved, profile_view_path(v)) : NULL;
    if (!mv) {
        profile_free(moved);
        return v; /* out of memory: the figures show stale */
    }
    int moved_file = profile_view_file(mv, profile->files[*file].path);
    if (moved_file < 0) {
        profile_view_free(mv);
        return v;
    }
    *file = moved_file;
    *owned = mv;
    return mv;
}

bool lsp_profiles_start_line_map(const LspProfiles *p, const char *path, const Document *text, LineMap *map) {
    int file;
    const ProfileView *v = lsp_profiles_view_for(p, path, &file);
    const char *recorded = v ? profile_view_profile(v)->files[file].sha256 : NULL;
    if (!recorded) return false;
    if (line_map_valid(map) && strcmp(map->baseline_sha256, recorded) == 0 && line_map_is_identity(map))
        return false; /* already follows it */
    char now[SHA256_HEX_CHARS + 1];
    sha256_hex_of(text->text, text->length, now);
    if (strcmp(now, recorded) != 0) return false; /* not the profiled text: nothing to follow from */
    line_map_free(map);
    return line_map_start(map, text, recorded);
}

bool lsp_profiles_merge(const LspProfiles *p, const char *path, const Document *doc, const PySource *py,
                        const CudaSource *cuda, const Config *cfg, const LineMap *map, FindingList *findings) {
    int file;
    ProfileView *owned;
    const ProfileView *v = lsp_profiles_view_through(p, path, doc, map, &file, &owned);
    if (!v) return true;
    /* shallow: only the cold setting differs. It shares cfg's lists (and their
     * caps): it is only read (passed as const), never grown or freed. */
    Config merged = *cfg;
    merged.profile_cold = p->cold;
    bool ok = engine_merge_profile_parsed(doc, py, cuda, profile_view_profile(v)->files[file].path, v, &merged,
                                          findings, NULL);
    profile_view_free(owned);
    return ok;
}

/* ---- projects of documents ----------------------------------------------------- */

static char *document_folder(const char *path) {
    if (!path || path[0] != '/') return NULL; /* not a file (an untitled buffer's URI) */
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    return dir;
}

/* The loaded profiles of root, with a reference (lock held); NULL when none. */
static LspProfiles *find_project(LspServer *s, const char *root) {
    if (s->profiles && strcmp(s->profiles->root, root) == 0) return lsp_profiles_ref(s);
    for (LspProfiles *p = s->other_profiles; p; p = p->next)
        if (strcmp(p->root, root) == 0) {
            p->refs++;
            return p;
        }
    return NULL;
}

LspProfiles *lsp_profiles_for_document(LspServer *s, const char *path) {
    pthread_mutex_lock(&s->lock);
    LspProfiles *workspace = lsp_profiles_ref(s);
    pthread_mutex_unlock(&s->lock);
    char *dir = document_folder(path);
    char *root = dir ? profile_store_marked_root_of(dir) : NULL;
    free(dir);
    if (!root) return workspace; /* not a file on disk, or in no marked project: the workspace's */
    pthread_mutex_lock(&s->lock);
    LspProfiles *found = find_project(s, root);
    lsp_profiles_unref(workspace);
    pthread_mutex_unlock(&s->lock);
    if (found) {
        free(root);
        return found;
    }
    /* a project of its own: read its advise.toml and profiles (off the lock) */
    LspProfiles *fresh = profiles_resolve(root, NULL);
    free(root);
    if (!fresh) return NULL;
    profiles_read(fresh);
    pthread_mutex_lock(&s->lock);
    found = find_project(s, fresh->root); /* another worker was quicker */
    if (!found && !s->stopping) {
        fresh->next = s->other_profiles;
        s->other_profiles = fresh;
        fresh->refs++; /* the list's reference */
        found = fresh;
        fresh = NULL;
    }
    if (fresh) lsp_profiles_unref(fresh);
    pthread_mutex_unlock(&s->lock);
    return found;
}

void lsp_config_for_project(const LspServer *s, const LspProfiles *p, Config *out) {
    const Config *editor = &s->config;
    const Config *toml = p ? &p->toml : NULL;
    config_init(out);
    const StringList *select = editor->select.count || !toml ? &editor->select : &toml->select;
    for (size_t i = 0; i < select->count; i++) string_list_add(&out->select, select->items[i]);
    for (int layer = 0; layer < 2; layer++) {
        const Config *c = layer == 0 ? toml : editor; /* the editor's settings come last: they win */
        if (!c) continue;
        for (size_t i = 0; i < c->ignore.count; i++) string_list_add(&out->ignore, c->ignore.items[i]);
        for (size_t i = 0; i < c->severity_count; i++)
            config_set_severity(out, c->severity[i].selector, severity_name(c->severity[i].severity));
        for (size_t i = 0; i < c->exclude.count; i++) string_list_add(&out->exclude, c->exclude.items[i]);
        if (c->cuda_build_dir) {
            free(out->cuda_build_dir);
            out->cuda_build_dir = strdup(c->cuda_build_dir);
        }
        if (c->cuda_gpu_arch) {
            free(out->cuda_gpu_arch);
            out->cuda_gpu_arch = strdup(c->cuda_gpu_arch);
        }
        if (c->cuda_path) {
            free(out->cuda_path);
            out->cuda_path = strdup(c->cuda_path);
        }
    }
    if (editor->profile_dir) out->profile_dir = strdup(editor->profile_dir);
}

void lsp_profiles_explain_unmerged(LspServer *s, const LspProfiles *p, const char *path) {
    if (!p || !p->dir || !p->files || !path || path[0] != '/') return;
    int file;
    if (p->set && lsp_profiles_view_for(p, path, &file)) return; /* merged */
    pthread_mutex_lock(&s->lock);
    bool told = false;
    for (size_t i = 0; i < s->told_unmerged.count && !told; i++) told = strcmp(s->told_unmerged.items[i], p->dir) == 0;
    if (!told) string_list_add(&s->told_unmerged, p->dir);
    pthread_mutex_unlock(&s->lock);
    if (told) return;
    char *message;
    if (!p->set) {
        message = format_string("advise: %s holds %zu profile%s, but none could be read (the advise log says why "
                                "for each): advice is not ranked by measured cost",
                                p->dir, p->files, p->files == 1 ? "" : "s");
    } else {
        const char *name = strrchr(path, '/');
        message = format_string("advise: no profile in %s mentions %s, so its advice shows no measured cost; "
                                "profile a run that executes it (advise profile -- <command>)",
                                p->dir, name ? name + 1 : path);
    }
    /* a project whose profiles are all unusable is a surprise worth a message; a
     * file that no profile ran is ordinary (profiles cover the scripts that were
     * run), and goes to the log */
    if (message)
        jsonrpc_send_notification(p->set ? "window/logMessage" : "window/showMessage",
                                  json_pack("{s:i,s:s}", "type", p->set ? 4 : 2, "message", message));
    free(message);
}
