#include "profiler/profile_set.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/base/growable.h"
#include "profiler/profile_json.h"
#include "analysis/base/text_format.h"

struct ProfileSet {
    ProfileView **views; /* newest first */
    size_t count, cap;
    char **notes;
    size_t note_count, note_cap;
};

static bool add_view(ProfileSet *set, ProfileView *v) {
    if (!array_reserve(&set->views, set->count, &set->cap, sizeof *set->views, 8)) return false;
    set->views[set->count++] = v;
    return true;
}

static bool add_note(ProfileSet *set, char *note) {
    if (!note) return false;
    if (!array_reserve(&set->notes, set->note_count, &set->note_cap, sizeof *set->notes, 4)) {
        free(note);
        return false;
    }
    set->notes[set->note_count++] = note;
    return true;
}

ProfileSet *profile_set_of(ProfileView *v) {
    ProfileSet *set = calloc(1, sizeof *set);
    if (!set || !v || !add_view(set, v)) {
        free(set);
        profile_view_free(v);
        return NULL;
    }
    return set;
}

void profile_set_free(ProfileSet *set) {
    if (!set) return;
    for (size_t i = 0; i < set->count; i++) profile_view_free(set->views[i]);
    free(set->views);
    for (size_t i = 0; i < set->note_count; i++) free(set->notes[i]);
    free(set->notes);
    free(set);
}

/* newest first: `created` descending (the format fixes its shape, so text
 * order is time order), then the file name descending (later names of
 * `advise profile` sort later) */
static int newest_first(const void *a, const void *b) {
    const ProfileView *x = *(ProfileView *const *)a, *y = *(ProfileView *const *)b;
    int c = strcmp(profile_view_profile(y)->created, profile_view_profile(x)->created);
    return c ? c : strcmp(profile_view_path(y), profile_view_path(x));
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static ProfileView *load_file(const char *path, char **error) {
    Profile *p = profile_read_file(path, PROFILE_FINAL, error);
    if (!p) return NULL;
    ProfileView *v = profile_view_new(p, path);
    if (!v) *error = format_string("%s: out of memory", path);
    return v;
}

static bool load_folder(ProfileSet *set, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return false;
    char **names = NULL;
    size_t count = 0, cap = 0;
    bool ok = true;
    for (struct dirent *e; ok && (e = readdir(d));) {
        if (e->d_name[0] == '.' || !ends_with(e->d_name, ".json")) continue;
        ok = array_reserve(&names, count, &cap, sizeof *names, 16);
        if (ok) {
            ok = (names[count] = format_string("%s/%s", dir, e->d_name)) != NULL;
            if (ok) count++;
        }
    }
    closedir(d);
    for (size_t i = 0; ok && i < count; i++) {
        char *error = NULL;
        ProfileView *v = load_file(names[i], &error);
        if (v) ok = add_view(set, v);
        else ok = add_note(set, error ? error : format_string("%s: unreadable", names[i]));
        if (!ok && v) profile_view_free(v);
    }
    for (size_t i = 0; i < count; i++) free(names[i]);
    free(names);
    return ok;
}

ProfileSet *profile_set_load(const char *path, char **error) {
    struct stat st;
    if (stat(path, &st) != 0) {
        *error = format_string("%s: %s", path, strerror(errno));
        return NULL;
    }
    ProfileSet *set = calloc(1, sizeof *set);
    if (!set) {
        *error = format_string("out of memory");
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        if (!load_folder(set, path)) {
            *error = format_string("%s: cannot read the folder (or out of memory)", path);
            profile_set_free(set);
            return NULL;
        }
        if (!set->count) {
            *error = set->note_count ? format_string("%s: no valid profile there (%s)", path, set->notes[0])
                                     : format_string("%s: no profile there (*.json)", path);
            profile_set_free(set);
            return NULL;
        }
        qsort(set->views, set->count, sizeof *set->views, newest_first);
        return set;
    }
    ProfileView *v = load_file(path, error);
    if (!v || !add_view(set, v)) {
        if (v) *error = format_string("out of memory");
        profile_view_free(v);
        profile_set_free(set);
        return NULL;
    }
    return set;
}

size_t profile_set_count(const ProfileSet *set) { return set->count; }

const ProfileView *profile_set_at(const ProfileSet *set, size_t i) { return i < set->count ? set->views[i] : NULL; }

size_t profile_set_notes(const ProfileSet *set, const char *const **notes) {
    *notes = (const char *const *)set->notes;
    return set->note_count;
}

const ProfileView *profile_set_for_file(const ProfileSet *set, const char *relative, const char *absolute,
                                        int *file) {
    /* an exact relative path in any profile beats a suffix match in a newer one */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < set->count; i++) {
            int f = pass == 0 ? profile_view_file(set->views[i], relative)
                              : profile_view_file_matching(set->views[i], NULL, absolute);
            if (f >= 0) {
                *file = f;
                return set->views[i];
            }
        }
    *file = -1;
    return NULL;
}

ProfileView *profile_set_take_newest(ProfileSet *set) {
    if (!set->count) return NULL;
    ProfileView *v = set->views[0];
    memmove(set->views, set->views + 1, (set->count - 1) * sizeof *set->views);
    set->count--;
    for (size_t i = 0; i < set->note_count; i++) profile_view_add_note(v, set->notes[i]);
    return v;
}
