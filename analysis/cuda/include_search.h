/* Finding a project's own headers when no compile database says where they
 * are: `#include "ggml.h"` from src/ggml-cuda/ when the header lives in
 * include/. nvcc finds it because the build passes -Iinclude; a parse with
 * no database does not. The search looks through the project (the nearest
 * folder above the file that holds .git, else a few folders up) for a file
 * whose path ends with what the directive spells, and answers the folder to
 * add with -I. Headers that are not in the project (a library that is not
 * installed) stay missing. */
#ifndef ADVISE_INCLUDE_SEARCH_H
#define ADVISE_INCLUDE_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

/* The folder that, added with -I, makes `#include "spelled"` find a header
 * of the project that holds from_dir: the match nearest to from_dir. Heap
 * string, or NULL when the project holds no such file (or spelled climbs
 * with ".."). Thread-safe; the project's file list is read once a minute at
 * most. */
char *include_search_find(const char *from_dir, const char *spelled);

/* The folders earlier searches in from_dir's project found (most projects
 * have one or two: include/, Common/). Adding them before the first parse
 * spares most files of a project the parse that finds them missing. A heap
 * array of heap strings (free each and the array); 0 when none. */
size_t include_search_learned(const char *from_dir, char ***dirs);

/* The project folder the search would look through for from_dir (heap), or
 * NULL. */
char *include_search_project_root(const char *from_dir);

/* ---- learning in the files' order -------------------------------------
 * What a file's searches start from (the learned folders, and the rank they
 * give a folder) depends on the files checked before it. A run that
 * analyses its files in parallel (`advise check -j N`) keeps that learning
 * in an IncludeLearning rather than in the process-wide lists, and runs the
 * analysis of each file in a lesson, which records the folders the file
 * started from and those it found. Committed in the files' order, a lesson
 * adds what its file found; when its file started from other folders than
 * the files before it left (one of them learned meanwhile), the commit says
 * so and the file is analysed again, in a fresh lesson. Every file then
 * sees what it would see were the files checked one after another. */
typedef struct IncludeLearning IncludeLearning;
typedef struct IncludeLesson IncludeLesson;

IncludeLearning *include_learning_new(void);
void include_learning_free(IncludeLearning *run);
/* This thread's searches learn in a new lesson of run (none when run is
 * NULL), until include_lesson_end. */
void include_lesson_begin(IncludeLearning *run);
/* Ends this thread's lesson and hands it over (NULL when there was none). */
IncludeLesson *include_lesson_end(void);
/* Called in the files' order. True, with what the lesson found added to run,
 * when its file started from what run held (or asked nothing); false when
 * it must be analysed again. Frees the lesson either way. */
bool include_learning_commit(IncludeLearning *run, IncludeLesson *lesson);
void include_lesson_free(IncludeLesson *lesson);

#endif
