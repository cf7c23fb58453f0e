// expect: runtime_error
// std::thread throws when the task limit refuses a thread; uncaught -> std::terminate -> SIGABRT.
#include <thread>
#include <vector>
#include <chrono>
int main() {
    std::vector<std::thread> ts;
    while (true) ts.emplace_back([] { std::this_thread::sleep_for(std::chrono::seconds(100)); });
}
