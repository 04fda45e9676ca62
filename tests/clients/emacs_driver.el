;;; emacs_driver.el --- drives editors/emacs/harn-state.el in batch Emacs against the real server  -*- lexical-binding: t; -*-

;; Every wait is bounded; a timeout fails with the step it was in.  Writes JSON to $PROBE_OUT.

(require 'json)
(require 'seq)
(require 'subr-x)

(defvar drv-results nil)
(defvar drv-steps nil)
(defvar drv-project (file-name-as-directory (getenv "PROJECT")))

(defun drv-put (key value) (push (cons key value) drv-results))
(defun drv-step (name) (push name drv-steps) (message "step: %s" name))

(defun drv-finish (code)
  (drv-put 'steps (vconcat (reverse drv-steps)))
  (drv-put 'messages (with-current-buffer "*Messages*" (buffer-substring-no-properties (point-min) (point-max))))
  (with-temp-file (getenv "PROBE_OUT") (insert (json-encode drv-results)))
  (kill-emacs code))

(defun drv-wait (seconds pred what)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (funcall pred)
      (error "Timed out after %ss waiting for %s" seconds (if (functionp what) (funcall what) what)))))

(defun drv-text (&optional buf)
  (with-current-buffer (or buf (current-buffer)) (buffer-substring-no-properties (point-min) (point-max))))

(defun drv-doc (uri needle what)
  "Wait until the current buffer is the document URI and shows NEEDLE."
  (drv-wait 20 (lambda () (and (equal (buffer-name) uri) (string-search needle (drv-text))))
            (lambda () (format "%s (buffer %s: %s)" what (buffer-name) (substring (drv-text) 0 (min 200 (buffer-size)))))))

(defun drv-diagnostics (file)
  "Open FILE (a state file), wait for harn-ls's diagnostics on it; ((line . text) ...)."
  (find-file (expand-file-name file drv-project))
  (drv-wait 30 #'eglot-managed-p (format "eglot to manage %s (mode %s)" file major-mode))
  (drv-wait 20 (lambda () (flymake-start) (flymake-diagnostics)) (format "diagnostics on %s" file))
  (vconcat (mapcar (lambda (d) (vector (line-number-at-pos (flymake-diagnostic-beg d)) (flymake-diagnostic-type d)
                                        (flymake-diagnostic-text d)))
                   (flymake-diagnostics))))

(defun drv-proposals (server)
  "The pending proposals (harn/tree, view skills): ((label . id) ...)."
  (let ((page (jsonrpc-request server :harn/tree '(:view "skills" :parent "proposals"))))
    (cl-loop for item across (plist-get page :items)
             when (equal (plist-get item :contextValue) "proposal")
             collect (cons (plist-get item :label) (plist-get (plist-get item :data) :id)))))

(condition-case err
    (progn
      (add-to-list 'load-path (getenv "PLUGIN_DIR"))
      (require 'harn-state)
      (harn-state-setup)
      (setq harn-state-server-command (split-string (getenv "HARN_LS_CMD") "\t")
            harn-state-settings (list :harnPath (getenv "HARN_DOUBLE"))
            harn-state-trusted t
            eglot-sync-connect 20)
      (setq default-directory drv-project)

      (drv-step "diagnostics on state files")
      (drv-put 'skill_diags (drv-diagnostics ".harn/skills/no-short/SKILL.md"))
      (drv-put 'skill_mode (symbol-name major-mode))
      (drv-put 'notes_diags (drv-diagnostics ".harn/memory/agent/notes/events.jsonl"))
      (drv-put 'server_class (symbol-name (eieio-object-class-name (eglot-current-server))))

      (drv-step "index")
      (let ((index (harn-state-index)))
        (drv-doc "harn-state:/index.md" "## Checkpoints" "the index document")
        (drv-put 'index_text (drv-text))
        (drv-put 'index_mode (symbol-name major-mode))
        (drv-put 'index_read_only buffer-read-only)
        (drv-put 'index_insert (condition-case e (progn (insert "edited") "inserted") (error (car e))))

        (drv-step "refresh")
        (let ((fetches (buffer-local-value 'harn-state--fetches index)))
          (with-temp-buffer
            (insert "{\"type\":\"store\",\"id\":\"019e5555-0000-7000-8000-00000000abce\",\"namespace\":\"agent/notes\","
                    "\"key\":\"emacs/marker\",\"value\":\"emacs refresh marker\",\"text\":\"emacs refresh marker\","
                    "\"tags\":[\"emacs\"],\"stored_at\":\"2026-05-20T10:00:00.000000000+00:00\"}\n")
            (append-to-file (point-min) (point-max) (expand-file-name ".harn/memory/agent/notes/events.jsonl" drv-project)))
          (drv-wait 20 (lambda () (string-search "(harn-state:/memory/agent/notes.md) — 5 active" (drv-text index)))
                    "the index to refresh after a memory event was appended")
          (drv-put 'refetched (> (buffer-local-value 'harn-state--fetches index) fetches)))

        (drv-step "follow a harn-state link")
        (set-buffer index)
        (goto-char (point-min))
        (search-forward "[ingest](harn-state:/checkpoints/ingest.md)")
        (goto-char (match-beginning 0))
        (harn-state-follow-link)
        (drv-doc "harn-state:/checkpoints/ingest.md" "ingest" "the checkpoint document")
        (drv-put 'checkpoint_read_only buffer-read-only)

        (drv-step "follow a file link")
        (harn-state-open "harn-state:/facts/fact_a26c5c67468c8d3fe33f8c8c0f5489e6.md")
        (drv-doc "harn-state:/facts/fact_a26c5c67468c8d3fe33f8c8c0f5489e6.md" "## Evidence" "the fact document")
        (goto-char (point-min))
        (search-forward "(file://")
        (harn-state-follow-link)
        (drv-put 'file_link (vector (buffer-file-name) (line-number-at-pos))))

      (drv-step "hover")
      (find-file (expand-file-name "src/billing/invoice.py" drv-project))
      (goto-char (point-min))
      (forward-line 27)
      (drv-put 'hover (harn-state-hover-text))
      (forward-line -20)
      (drv-put 'hover_none (harn-state-hover-text))

      (drv-step "recall")
      (harn-state-recall "money Decimal")
      (drv-doc "harn-state:/recall.md?q=money%20Decimal" "## Results" "the recall document")
      (drv-put 'recall_text (drv-text))

      (drv-step "accept through eglot's code actions on the pattern-learning log")
      (let* ((log ".harn/memory/project/pattern-learning/events.jsonl")
             (skill (expand-file-name ".claude/skills/learned-reconcile-stripe-payouts-ledger/SKILL.md" drv-project)))
        (find-file (expand-file-name log drv-project))
        (drv-wait 30 #'eglot-managed-p "eglot to manage the pattern-learning log")
        (goto-char (point-min))
        (search-forward "\"key\":\"pending:prompt-2629ccc60808\"")
        (drv-put 'accept_actions (vconcat (mapcar (lambda (a) (plist-get a :title))
                                         (eglot-code-actions (line-beginning-position) (line-end-position)))))
        (eglot-code-actions (line-beginning-position) (line-end-position) "source.harnState.accept" t)
        (drv-wait 20 (lambda () (file-exists-p skill)) "Accept to write the skill")
        ;; the server shows the written skill (window/showDocument)
        (drv-wait 20 (lambda () (get-file-buffer skill)) "window/showDocument of the written skill")
        (drv-put 'skill_written (with-temp-buffer (insert-file-contents skill) (buffer-string))))

      (drv-step "reject through a proposal document's actions")
      (let* ((server (harn-state-current-server))
             (pending (drv-proposals server))
             (month-end (cdr (seq-find (lambda (p) (string-prefix-p "Month-end close" (car p))) pending)))
             (uri (format "harn-state:/proposals/%s.md" month-end))
             (offered nil))
        (drv-put 'pending_before (vconcat (mapcar #'car pending)))
        (harn-state-open uri)
        (drv-doc uri "# Proposal" "the proposal document")
        (drv-put 'reject_result
                 (harn-state-code-actions
                  (lambda (titles)
                    (setq offered titles)
                    (seq-find (lambda (title) (string-prefix-p "Reject" title)) titles))))
        (drv-put 'document_actions (vconcat offered))
        (drv-wait 20 (lambda () (not (assoc-default "Month-end close workflow" (drv-proposals server))))
                  "the rejected proposal to leave the pending list")
        (drv-put 'pending_after (vconcat (mapcar #'car (drv-proposals server)))))

      (drv-step "open any spelling, refuse control characters")
      (harn-state-open "harn-state:///runs/run_019dfd98-73c0-704c-9bb0-e3d1289d2568.md")
      (drv-doc "harn-state:/runs/run_019dfd98-73c0-704c-9bb0-e3d1289d2568.md" "ingest" "the run document")
      (drv-put 'refused (condition-case e (progn (harn-state-open-target "harn-state:/facts/x\n.md") "opened")
                          (user-error (cadr e))))

      (drv-step "C-x C-f harn-state:/...")
      (let ((default-directory (expand-file-name "src/" drv-project)))
        (find-file "harn-state:/skills/no-short.md"))
      (drv-wait 20 (lambda () (get-buffer "harn-state:/skills/no-short.md")) "the document buffer of find-file")
      (set-buffer "harn-state:/skills/no-short.md")
      (drv-doc "harn-state:/skills/no-short.md" "no-short" "the skill document opened with find-file")
      (drv-put 'find_file (vector (symbol-name major-mode) buffer-read-only
                                  (seq-some (lambda (b) (and (buffer-file-name b) (string-search "harn-state:" (buffer-file-name b))))
                                            (buffer-list))))

      (drv-put 'servers (length (seq-filter #'jsonrpc-running-p (hash-table-keys harn-state--status))))
      (eglot-shutdown-all)
      (drv-finish 0))
  (error
   (drv-put 'error (error-message-string err))
   (drv-put 'current_buffer (buffer-name))
   (drv-put 'current_text (substring (drv-text) 0 (min 1500 (buffer-size))))
   (ignore-errors (eglot-shutdown-all))
   (drv-finish 1)))
