fn main() {
    web::run();
}
