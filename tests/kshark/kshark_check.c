/*
 * kshark_check FILE PLUGIN.so: opens a trace.dat with libkshark (the
 * library under KernelShark's GUI), loads KernelShark's sched_events
 * plugin on it as the GUI does, loads the entries and prints what the
 * plots are made of:
 *
 *   plugin sched_events: loaded | failed to initialize
 *   entries N
 *   switch CPU TS PREV_PID NEXT_PID ENTRY_PID   (one per sched_switch)
 *   task PID COMM ENTRIES                       (one per task lane)
 *
 * With the plugin active, a sched_switch entry belongs to the task switched
 * in (ENTRY_PID == NEXT_PID): that is how the CPU plots are coloured and
 * where a task's lane starts. Exit status 0 if the file opened and entries
 * loaded, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libkshark.h"
#include "libkshark-plugin.h"

int main(int argc, char **argv)
{
	struct kshark_context *ctx = NULL;
	struct kshark_data_stream *stream;
	struct kshark_plugin_list *plugin;
	struct kshark_dpi_list *dpi;
	struct kshark_entry **rows = NULL;
	int *pids = NULL;
	ssize_t n, n_tasks, i, j;
	int sd, switch_id;

	if (argc != 3) {
		fprintf(stderr, "usage: kshark_check FILE PLUGIN.so\n");
		return 2;
	}
	if (!kshark_instance(&ctx))
		return 1;
	sd = kshark_open(ctx, argv[1]);
	if (sd < 0) {
		fprintf(stderr, "kshark_open failed: %d\n", sd);
		return 1;
	}
	stream = kshark_get_data_stream(ctx, sd);
	plugin = kshark_register_plugin(ctx, "sched_events", argv[2]);
	if (!plugin || !plugin->process_interface) {
		fprintf(stderr, "cannot load the plugin %s\n", argv[2]);
		return 1;
	}
	dpi = kshark_register_plugin_to_stream(stream, plugin->process_interface, true);
	kshark_handle_all_dpis(stream, KSHARK_PLUGIN_INIT);
	if (dpi && (dpi->status & KSHARK_PLUGIN_LOADED) && !(dpi->status & KSHARK_PLUGIN_FAILED))
		printf("plugin sched_events: loaded\n");
	else
		printf("plugin sched_events: failed to initialize\n");

	n = kshark_load_entries(ctx, sd, &rows);
	if (n <= 0) {
		fprintf(stderr, "no entries loaded\n");
		return 1;
	}
	printf("entries %zd\n", n);
	switch_id = kshark_find_event_id(stream, "sched/sched_switch");
	for (i = 0; i < n; i++) {
		int64_t prev = -1, next = -1;

		if (rows[i]->event_id != switch_id)
			continue;
		kshark_read_event_field_int(rows[i], "prev_pid", &prev);
		kshark_read_event_field_int(rows[i], "next_pid", &next);
		printf("switch %d %lld %lld %lld %d\n", rows[i]->cpu,
		       (long long)rows[i]->ts, (long long)prev, (long long)next,
		       rows[i]->pid);
	}
	n_tasks = kshark_get_task_pids(ctx, sd, &pids);
	for (i = 0; i < n_tasks; i++) {
		ssize_t count = 0;
		char *comm = kshark_comm_from_pid(sd, pids[i]);

		for (j = 0; j < n; j++)
			count += rows[j]->pid == pids[i];
		printf("task %d %s %zd\n", pids[i], comm ? comm : "?", count);
		free(comm);
	}
	for (i = 0; i < n; i++)
		free(rows[i]);
	free(rows);
	free(pids);
	kshark_close_all(ctx);
	kshark_free(ctx);
	return 0;
}
