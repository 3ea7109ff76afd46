;;; emacs_eglot.el --- end-to-end test of editors/emacs/advise.el  -*- lexical-binding: t -*-

;; Runs on Debian 12's Emacs 28 with elpa-eglot (Eglot 1.9):
;;
;;   HOME=$(mktemp -d) PATH=$(dirname ADVISE_BINARY):$PATH \
;;     emacs --batch --no-site-file -l tests/e2e/emacs_eglot.el
;;
;; The `advise' on PATH is the one under test.  A workspace laid out as the
;; repository is made in a temporary folder (git init, the sample
;; samples/python/benchmark_matmul.py and its H200 profile in
;; .advise/profiles/, copied: nothing in the repository changes).  Loads
;; advise.el, opens the sample, starts Eglot (which must pick advise),
;; waits for Flymake's diagnostics, runs `advise-findings', checks the
;; tabulated list (ranked rows: rank, cost, code, file:line, message;
;; costs non-increasing) and that RET visits the finding.  One line per
;; check on stdout, then a PASS/FAIL line; exits 0 when every check passed.

;;; Code:

(require 'cl-lib)

(defvar advise-test--passed 0)
(defvar advise-test--failed 0)
(defvar advise-test--timeout (let ((v (getenv "ADVISE_E2E_TIMEOUT_MS")))
                               (if v (/ (string-to-number v) 1000.0) 15.0)))

(defun advise-test--out (fmt &rest args)
  (princ (concat (apply #'format fmt args) "\n")))

(defun advise-test--check (ok what &optional detail)
  (if ok
      (progn (cl-incf advise-test--passed) (advise-test--out "ok - %s" what))
    (cl-incf advise-test--failed)
    (advise-test--out "not ok - %s%s" what
                      (if detail (format "\n    %s" (replace-regexp-in-string
                                                     "\n" "\n    " (format "%s" detail)))
                        "")))
  ok)

(defun advise-test--require (ok what &optional detail)
  (unless (advise-test--check ok what detail)
    (throw 'advise-test-abort nil)))

(defun advise-test--wait (pred &optional seconds)
  "Wait until PRED is non-nil, at most SECONDS; return its value."
  (let ((deadline (+ (float-time) (or seconds advise-test--timeout)))
        value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    value))

(let* ((here (file-name-directory (or load-file-name buffer-file-name)))
       (repo (expand-file-name "../.." here))
       (workspace (make-temp-file "advise-e2e-emacs-" t))
       (root (file-name-as-directory (expand-file-name "project" workspace)))
       (sample (expand-file-name "samples/python/benchmark_matmul.py" root))
       (repo-sample (expand-file-name "samples/python/benchmark_matmul.py" repo))
       (repo-text (with-temp-buffer (insert-file-contents-literally repo-sample) (buffer-string)))
       (status 1))
  ;; nothing from the user's configuration, nothing written outside the workspace
  (setq user-emacs-directory (file-name-as-directory (expand-file-name "emacs.d" workspace))
        package-user-dir (expand-file-name "elpa" user-emacs-directory)
        make-backup-files nil
        auto-save-default nil
        create-lockfiles nil
        eglot-sync-connect t
        eglot-autoreconnect nil)
  (require 'package)
  (package-initialize)
  (unwind-protect
      (catch 'advise-test-abort
        (make-directory (file-name-directory sample) t)
        (make-directory (expand-file-name ".advise/profiles" root) t)
        (copy-file repo-sample sample)
        (copy-file (expand-file-name "samples/profiles/benchmark_matmul.json" repo)
                   (expand-file-name ".advise/profiles/benchmark_matmul.json" root))
        (let ((default-directory root))
          (advise-test--require (eq 0 (call-process "git" nil nil nil "init" "-q"))
                                "git init in the workspace (the project root)"))
        (advise-test--require (executable-find "advise")
                              (format "advise is on exec-path: %s" (executable-find "advise")))

        (advise-test--require (condition-case err (progn (load (expand-file-name "editors/emacs/advise.el" repo) nil t) t)
                                (error (format "%S" err)))
                              (format "advise.el loads (Eglot %s)"
                                      (or (and (boundp 'eglot--version) eglot--version)
                                          (let ((lib (locate-library "eglot"))) (and lib (file-name-nondirectory (directory-file-name (file-name-directory lib))))))))
        (advise-test--check (featurep 'advise) "(provide 'advise)")
        (advise-test--check (eq (cdr (car eglot-server-programs)) #'advise--contact)
                            "advise is first in eglot-server-programs" (car eglot-server-programs))
        (advise-test--check (equal (cl-mapcar #'car (car (car eglot-server-programs)))
                                   (append '(python-mode c-mode c++-mode)
                                           (cl-remove-if-not #'fboundp '(python-ts-mode c-ts-mode c++-ts-mode cuda-mode))))
                            "for python-mode, c-mode, c++-mode (and the modes that are defined)"
                            (car (car eglot-server-programs)))

        ;; the sample, with Eglot
        (find-file sample)
        (advise-test--check (eq major-mode 'python-mode) "the sample opens in python-mode" major-mode)
        (let ((inhibit-message t))
          (call-interactively #'eglot))
        (let ((server (advise-test--wait #'eglot-current-server)))
          (advise-test--require server "M-x eglot connects")
          (advise-test--check (object-of-class-p server 'advise-eglot-server) "Eglot picked advise for python-mode"
                              (eieio-object-class server))
          (advise-test--check (equal (expand-file-name (project-root (eglot--project server))) root)
                              "the server's project is the workspace" (project-root (eglot--project server))))
        (let ((codes (advise-test--wait
                      (lambda ()
                        (let ((codes (mapcar (lambda (d)
                                               (let ((text (flymake-diagnostic-text d)))
                                                 (and (string-match "\\b\\(P[YR][0-9][0-9][0-9]\\)\\b" text)
                                                      (match-string 1 text))))
                                             (flymake-diagnostics))))
                          (and (member "PY002" codes) (member "PY003" codes) codes))))))
          (advise-test--check codes "Flymake shows advise's diagnostics (PY002, PY003)"
                              (mapcar #'flymake-diagnostic-text (flymake-diagnostics))))

        ;; M-x advise-findings
        (let* ((buffer (advise-findings))
               (filled (advise-test--wait (lambda () (buffer-local-value 'tabulated-list-entries buffer)) 60)))
          (advise-test--require filled "advise-findings fills the list" buffer)
          (with-current-buffer buffer
            (advise-test--check (derived-mode-p 'tabulated-list-mode) "the list is a tabulated-list-mode buffer" major-mode)
            (let* ((entries tabulated-list-entries)
                   (costs (mapcar (lambda (e) (or (plist-get (plist-get (car e) :finding) :cost_seconds) 0)) entries))
                   (ranks (mapcar (lambda (e) (aref (cadr e) 0)) entries))
                   (first (cadr (car entries))))
              (advise-test--check (equal ranks (mapcar #'number-to-string (number-sequence 1 (length entries))))
                                  (format "%d rows ranked 1..%d" (length entries) (length entries)))
              (advise-test--check (and (> (car costs) 0)
                                       (cl-loop for (a b) on costs while b always (>= a b)))
                                  "ranked by cost (non-increasing, the first one measured)" costs)
              (advise-test--check (and (string-match-p "^[0-9.]+ [µm]?s$" (aref first 1))
                                       (string-match-p "^P[YR][0-9][0-9][0-9]$" (aref first 2))
                                       (string-match-p "^samples/python/benchmark_matmul\\.py:[0-9]+$" (aref first 3))
                                       (> (length (aref first 4)) 10))
                                  "each row: rank, cost, code, file:line, message" first)
              (goto-char (point-min))
              (advise-test--check (search-forward (aref first 3) nil t) "the rows are printed" (buffer-string))
              (advise-test--out "    %s" (replace-regexp-in-string
                                          "\n" "\n    "
                                          (buffer-substring (point-min)
                                                            (save-excursion (goto-char (point-min)) (forward-line 5) (point)))))
              ;; RET visits the first finding
              (goto-char (point-min))
              (let ((line (plist-get (car (car entries)) :line)))
                (advise-findings-visit)
                (advise-test--check (and (equal (buffer-file-name) sample) (= (line-number-at-pos) line))
                                    "RET visits the finding's file and line"
                                    (list (buffer-file-name) (line-number-at-pos) line))))))

        ;; the advise/profileChanged notification asks for the list again
        (let ((buffer (get-buffer (format "*advise findings: %s*" (file-name-nondirectory (directory-file-name root))))))
          (with-current-buffer buffer (setq tabulated-list-entries nil))
          (eglot-handle-notification (advise--server) 'advise/profileChanged :profiles [])
          (advise-test--check (advise-test--wait (lambda () (buffer-local-value 'tabulated-list-entries buffer)) 60)
                              "advise/profileChanged refreshes the list")
          ;; g (revert-buffer) asks again
          (with-current-buffer buffer
            (setq tabulated-list-entries nil)
            (revert-buffer))
          (advise-test--check (advise-test--wait (lambda () (buffer-local-value 'tabulated-list-entries buffer)) 60)
                              "g (revert-buffer) asks for the findings again"))

        ;; a missing binary: a clear error, no process
        (let* ((advise-program (expand-file-name "no-such/advise" workspace))
               (err (condition-case e (progn (advise--contact) nil) (user-error (cadr e)))))
          (advise-test--check (and err (string-match-p "not found" err))
                              "a missing binary: a clear error" err))

        ;; M-x eglot-shutdown: shutdown and exit, no error
        (with-current-buffer (find-buffer-visiting sample)
          (let* ((server (eglot-current-server))
                 (err (condition-case e (let ((inhibit-message t)) (eglot-shutdown server) nil)
                        (error e))))
            (advise-test--check (and server (not err) (not (jsonrpc-running-p server)))
                                "eglot-shutdown stops the server without an error" err)))
        (advise-test--check (equal repo-text (with-temp-buffer (insert-file-contents-literally repo-sample) (buffer-string)))
                            "the repository sample is untouched")
        (setq status (if (and (= advise-test--failed 0) (> advise-test--passed 0)) 0 1)))
    (dolist (b (buffer-list))
      (with-current-buffer b (set-buffer-modified-p nil)))
    (delete-directory workspace t))
  (when (and (/= status 0) (= advise-test--failed 0))
    (cl-incf advise-test--failed))
  (advise-test--out "%s: emacs %s eglot advise.el (editors/emacs) against %s"
                    (if (= status 0) "PASS" "FAIL") emacs-version (executable-find "advise"))
  (advise-test--out "emacs-eglot: %d passed, %d failed" advise-test--passed advise-test--failed)
  (kill-emacs status))

;;; emacs_eglot.el ends here
