#include "kube/informer.h"

#include "core/prometheus_text.h"

namespace commgate::kube {

Informer::Informer(const ApiClient& client, Watcher::Options options) : path_(options.path) {
  watcher_ = std::make_unique<Watcher>(client, std::move(options),
                                       [this](const WatcherEvent& e) { store_.apply(e); });
}

Informer::~Informer() {
  stop();
}

void Informer::on_change(Store::Handler handler) {
  store_.subscribe(std::move(handler));
}

void Informer::index_label(const std::string& label) {
  store_.index_label(label);
}

void Informer::start() {
  watcher_->start();
}

void Informer::stop() {
  watcher_->stop();
}

std::string informer_metrics_text(const std::vector<const Informer*>& informers,
                                  std::string_view prefix) {
  struct Row {
    std::string collection;
    WatcherState state;
    WatcherCounters counters;
    size_t objects;
  };
  std::vector<Row> rows;
  for (const Informer* i : informers)
    rows.push_back(
        {prometheus_escape_label(i->path()), i->state(), i->counters(), i->store().size()});

  std::string out;
  const auto header = [&](const std::string& name, const char* type, const char* help) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  const auto family = [&](const char* suffix, const char* type, const char* help, auto&& value) {
    const std::string name = std::string(prefix) + suffix;
    header(name, type, help);
    for (const Row& r : rows)
      out += name + "{collection=\"" + r.collection + "\"} " + std::to_string(value(r)) + "\n";
  };
  family("_watch_lists_total", "counter",
         "Complete lists of a watched collection (the first and every relist).",
         [](const Row& r) { return r.counters.lists; });
  family("_watch_relists_total", "counter",
         "Lists after the first: a 410 Expired or an ERROR event forced a relist.",
         [](const Row& r) { return r.counters.relists; });
  family("_watch_restarts_total", "counter",
         "Watches started again from the last resourceVersion (ended or dropped).",
         [](const Row& r) { return r.counters.restarts; });
  family("_watch_errors_total", "counter",
         "Failed lists, refused or broken watches and ERROR events.",
         [](const Row& r) { return r.counters.errors; });
  family("_watch_events_total", "counter", "Added, modified and deleted objects received.",
         [](const Row& r) { return r.counters.events; });
  family("_watch_objects", "gauge", "Objects of the collection held in the watch cache.",
         [](const Row& r) { return r.objects; });

  const std::string state = std::string(prefix) + "_watch_state";
  header(state, "gauge", "Current state of each watcher (1 for the state it is in).");
  for (const Row& r : rows)
    out += state + "{collection=\"" + r.collection + "\",state=\"" + to_string(r.state) + "\"} 1\n";
  return out;
}

}  // namespace commgate::kube
