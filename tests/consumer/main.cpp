#include <covenant/version.hpp>

#include <iostream>

int main() {
    std::cout << covenant::version() << '\n';
    return covenant::version().empty() ? 1 : 0;
}
