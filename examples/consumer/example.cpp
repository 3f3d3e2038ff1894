// example.cpp — the C core from C++: a fan-out of tasks and a task that depends on all of them.
// Built by examples/consumer/CMakeLists.txt, or with pkg-config:
//   c++ -std=c++17 example.cpp $(pkg-config --cflags --libs operations-core) -o example_cpp
#include <operations_core.h>

#include <atomic>
#include <cstdio>
#include <vector>

namespace {

std::atomic<int> squares_sum{0};

void square(void *context) {
    int n = *static_cast<int *>(context);
    squares_sum.fetch_add(n * n);
}

void report(void *) { std::printf("sum of squares: %d\n", squares_sum.load()); }

}  // namespace

int main() {
    op_queue_t *queue = op_queue_create("cpp-example", OP_QOS_DEFAULT, OP_WIDTH_DEFAULT);
    if (queue == nullptr) return 1;

    std::vector<int> numbers{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    op_task_t *sink = op_task_create(report, nullptr, nullptr);
    std::vector<op_task_t *> tasks;
    for (int &n : numbers) {
        op_task_t *task = op_task_create(square, &n, nullptr);
        op_task_add_dependency(sink, task);   // the sink runs after every square
        tasks.push_back(task);
    }
    op_queue_submit(queue, sink);
    for (op_task_t *task : tasks) op_queue_submit(queue, task);

    int rc = op_task_wait(sink, OP_WAIT_FOREVER);
    for (op_task_t *task : tasks) op_task_release(task);
    op_task_release(sink);
    op_queue_release(queue);
    if (rc != 0 || squares_sum.load() != 385) return 1;
    std::puts("ok");
    return 0;
}
